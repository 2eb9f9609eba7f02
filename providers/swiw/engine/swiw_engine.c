// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine's progress loop: the thread, lock and doorbell that drive
 * every stream (swiw_stream.c) between the provider's swiw-abi.h rings
 * and a backend's lower half (swiw_backend.h), whichever backend runs it.
 *
 * ENGINE LOCK
 * One mutex, eng_lock, serialises the whole engine: the progress thread
 * holds it while it handles the events of one epoll_wait() (MPA, TX, RX,
 * completions, errors) and drops it only to wait; the provider takes it
 * in the few engine entry points it calls (attach, flush, reset, detach),
 * never on the post or poll path. Everything engine-owned is under it:
 * every stream, the consumer views of SQ/RQ/SRQ rings (sq_eng, rq->eng),
 * the stream list and the graveyard. Lock order: a QP's state_lock or a
 * CQ's poll_lock, then eng_lock, then the STag table's lock; the engine
 * never takes a state_lock (it moves a QP to error with an atomic store).
 * Functions that need it call swiw_eng_assert_held() on entry.
 *
 * PROGRESS THREAD
 * Started with the first stream or broker session, one per process: epoll
 * over the stream sockets, the broker's event socket and an eventfd
 * doorbell; it sleeps no longer than the next dial attempt is due
 * (swiw_setup_broker.c). After any work it keeps polling
 * (epoll_wait with no timeout, and the send queues) for SWIW_ENG_SPIN_NS
 * before it sleeps, since a blocking wake-up costs 25-30 us here; not
 * while the program may be spinning on memory for what comes next (see
 * last_empty_ns below): on a CPU they share, the spin would keep the
 * program from seeing the data the thread places. A
 * stream is freed only by this thread, after the epoll_wait() that could
 * still name it has been handled (the graveyard), so an event never
 * points at freed memory.
 *
 * POLL-DRIVEN PROGRESS (progress = poll, the default)
 * ibv_poll_cq (or start_poll) that finds its CQ empty, and ibv_post_send,
 * run the engine themselves when the lock is free (trylock: an
 * application thread never waits for it): poll_cq handles whatever the
 * sockets hold (one epoll_wait(0) under the lock, so its events never
 * outlive the lock; with one in-process stream, most polls read its
 * socket directly instead, which spares the epoll_wait() before each
 * read), post_send transmits what it queued. A busy-polling
 * program then moves its own data with no thread wake-up in the path; a
 * poller that found the lock taken asks the thread to let go at its next
 * receive round (swiw_eng_poller_waits). While one polls in a loop
 * (last_poll_ns, set by every poll, is within SWIW_ENG_POLLING_NS), the
 * progress thread does not wait on the sockets but naps, and takes the
 * lock only when it is free, so it neither competes for the CPUs nor for
 * the lock (post_send's own pump rings no doorbell unless it left WRs
 * that nothing else brings back); once the program stops calling (it
 * blocks, sits in pause(), or spins on memory as ib_write_lat does), the
 * thread works as in thread mode within SWIW_ENG_NAP_NS. A program that
 * takes completions but has not found a CQ empty lately (last_empty_ns)
 * may be off spinning on memory, so the thread naps on the sockets
 * rather than in nanosleep(), and places what comes at once. While the
 * program has polled within SWIW_ENG_POLLED_NS and armed no CQ, the thread
 * neither spins after work nor queues on the lock behind it: on a CPU
 * they share, each would cost the program a context switch per message.
 * Its naps double while the program goes on polling (to
 * SWIW_ENG_NAP_MAX_NS); arming a CQ, which a program does before it
 * blocks on a channel, rings it out of a long one. "Recently"
 * is measured from the thread's own last wake-up: a program that shares
 * the thread's CPU cannot poll while the thread runs, and may have been
 * in a long sendmsg() just before. A poller that handled events bumps
 * eng_poll_gen, so a deadline it set is seen by a thread about to sleep
 * (wake_for_timers covers a thread already asleep); any other holder
 * that set one (swiw_eng_deadline) does the same as it unlocks. Only the
 * thread reaps the graveyard, after handling its own epoll_wait(), as
 * above.
 *
 * A post that finds the lock held leaves its WR to the holder, which
 * pumps as it lets go (posted_after_unlock), rather than ring: on
 * ib_write_lat the program posts the moment the thread's round places the
 * Write, and the bell woke the thread again, from the other CPU, for a WR
 * that round had mostly sent already. While the program polls, the thread
 * also keeps off the CPU the program polls from (thread_place), so that
 * the peer's send, which wakes it, runs on its CPU; its rounds then take
 * no new WR (eng_sq_hold), and a post waits for the round to end
 * (post_spin), so that the program's own send wakes the peer's thread
 * from the peer's thread's CPU as well. The thread never queues on the
 * lock (thread_lock): each unlock of a program that polls would wake it.
 *
 * With the kernel helper, which places the data itself, a poll reads the
 * helper's event rings in memory, and the thread leaves the helper's file
 * out of its set while the program polls, arms no CQ and looks at no
 * channel (helper_mute): it then sleeps up to SWIW_ENG_MUTED_NS, without
 * the lock, and wakes for the doorbell, a deadline, the broker or a
 * stream being set up.
 *
 * In the process, the same holds for a lone stream's socket (sock_mute):
 * while the program's direct reads take its input and the thread's take
 * almost none, the socket leaves the set, since TCP calls every waiter of
 * a socket for each segment it queues. The thread naps on the doorbell,
 * and brings the socket back before it waits on the set, once the program
 * has taken no input for SWIW_ENG_MUTE_HOLD_NS.
 *
 * A program about to block in ibv_get_cq_event (the preload library's,
 * which calls swiw_chan_wait first) looks for SWIW_ENG_SPIN_NS at its
 * channel and the engine's sockets without sleeping, and does what comes
 * itself (swiw_engine_chan_wait): a message that completes that soon
 * wakes nobody, where it used to wake the thread and then the program.
 * Meanwhile, and until SWIW_ENG_CHAN_NS after a look that found a record
 * (the program comes back for the next one), the thread naps on the
 * doorbell alone, as for a polling program; a look that gives up rings
 * it, and the program sleeps in libibverbs's read() as ever.
 *
 * A CQ, fed by many QPs, is produced into under eng_lock alone; resize_cq
 * takes it too, after the CQ's poll_lock.
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "swiw.h"
#include "swiw_config.h"
#include "swiw_stream.h"

#define SWIW_ENG_SPIN_NS 50000
/* A program that called poll_cq this recently is polling its CQ in a
 * loop: the thread naps for SWIW_ENG_NAP_NS rather than compete. */
#define SWIW_ENG_POLLING_NS 10000
#define SWIW_ENG_NAP_NS 50000
/* While the program goes on polling empty CQs, each nap is twice the last,
 * up to this: every nap ends in a context switch on the CPU the program
 * spins on (at 50 us, one per few messages of a ping-pong). */
#define SWIW_ENG_NAP_MAX_NS 2000000
/* A program that polled this recently drives the engine itself: the
 * thread neither spins after work nor waits for the lock behind it, either
 * of which takes the CPU they may share. */
#define SWIW_ENG_POLLED_NS 1000000
/* Polling empty CQs for this long: the program waits by polling. */
#define SWIW_ENG_WAITING_NS 5000
/* Posts or completions this close together: the program streams. */
#define SWIW_ENG_STREAM_NS 5000
/* How long the thread waits for a holder to take the events it left. */
#define SWIW_ENG_LEFT_NS 200000
/* With one in-process stream, a poller reads its socket directly
 * (swiw_stream_poll_direct) in all but one poll of this many, where
 * epoll_wait() serves the doorbell, the broker and the CM as well; the
 * second while the socket is out of the set (sock_mute), where that
 * epoll_wait() cannot bring its input, and a message that comes during
 * it waits a poll more. */
#define SWIW_ENG_DIRECT_EVERY 4
#define SWIW_ENG_DIRECT_EVERY_MUTED 64
/*
 * The thread's nap where it would yield to a program that takes the
 * events itself. A yield sets the thread's EEVDF deadline a slice ahead,
 * and a thread so set back waited behind the program spinning on its CPU
 * until the tick (ib_write_lat 64 B, 20,000 iterations: 1,100 waits over
 * 1 ms after a yield; t_avg 137 us, p99 2.0 ms; with the nap 19, 40 us,
 * 0.66 ms). On ib_write_bw the nap costs a context switch where the yield
 * on an idle CPU cost none (about 30 % more of the thread's switches;
 * bandwidth the same within this host's noise).
 */
#define SWIW_ENG_YIELD_NAP_NS 20000
/* Naps the thread may find the lock taken before it waits for it. */
#define SWIW_ENG_BUSY_NAPS 20
/* A program whose look at its channel found a record this recently will
 * look again (swiw_engine_chan_wait): the thread leaves the sockets to it,
 * and naps no longer than SWIW_ENG_CHAN_NAP_NS meanwhile. */
#define SWIW_ENG_CHAN_NS 200000
#define SWIW_ENG_CHAN_NAP_NS 200000
/* The longest sleep of a thread that does not hear the kernel helper
 * (helper_mute): a program that stops polling without arming a CQ has
 * the helper's events taken this late at most. */
#define SWIW_ENG_MUTED_NS 10000000
/* A program that polled this recently still polls, for helper_mute: its
 * polls may be far apart (ib_write_lat spins on memory between them). */
#define SWIW_ENG_MUTE_POLLED_NS 20000000
/* A program whose polls took a stream's input this recently still polls
 * (mute_holds); one that took this many times what the thread took since
 * the thread's last round reads its socket itself (sock_mute). */
#define SWIW_ENG_MUTE_HOLD_NS 500000
#define SWIW_ENG_MUTE_RATIO 8

static pthread_mutex_t eng_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long eng_owner; /* pthread_self() of the holder, or 0 */
static bool eng_started;
static int eng_epfd = -1, eng_evfd = -1;
static pthread_t eng_thread;
static unsigned int eng_waiters; /* application threads in swiw_eng_lock */
static char doorbell_tag, helper_tag;
static bool helper_watched;
/* The helper's file is out of the thread's set while a program polls: its
 * polls read the event rings themselves (helper_mute). */
static bool helper_muted;
/* The thread took a stream's socket out of its epoll set (sock_mute). */
static bool socks_muted;
static int helper_fd = -1;
static bool eng_poll_mode; /* progress = poll */
static uint64_t last_poll_ns; /* when an application last drove it */
static uint64_t thread_wake_ns; /* the thread sleeps until then at most */
static bool thread_long_nap; /* napping past SWIW_ENG_NAP_NS; a bell ends it */
/* Bumped by a poller that handled events under the lock: the thread,
 * about to sleep, looks again at deadlines it has not seen. */
static uint32_t eng_poll_gen;
static unsigned int eng_polls; /* under the lock: swiw_engine_poll's count */
static bool eng_poll_wanted; /* a poller found the lock taken */
static uint64_t last_empty_ns; /* when a poll last found its CQ empty */
static uint64_t empty_since_ns; /* the first of the polls since, all empty */
/* When a poll last read the direct stream's socket and took the peer's
 * input (poll_once), and how many times; how many times the thread took
 * a stream's input (eng_events). */
static uint64_t last_direct_ns;
static unsigned long direct_takes, thread_takes;
/* For app_streams: when a pump last took two WRs or more, or left two or
 * more in flight or some queued, or a poll found two completions or more;
 * the mean gap between posts, and between polls that found completions
 * (gap_note), and when the last came. */
static uint64_t eng_deep_ns;
static uint64_t post_gap_ns = SWIW_ENG_POLLED_NS;
static uint64_t found_gap_ns = SWIW_ENG_POLLED_NS, last_found_ns;
static uint64_t last_arm_ns; /* when a CQ was last armed */
/* The CPU the program last polled from (-1: none yet), for thread_place. */
static int app_cpu = -1;
/* The CPU thread_place keeps the thread off (-1: none); written by the
 * thread only, read by post_spin. */
static int eng_cpu_off = -1;
/* Threads in a look at their channel (swiw_engine_chan_wait), when a look
 * last found a record (0 after one that gave up), and when one began. */
static unsigned int eng_chan_waiters;
static uint64_t last_chan_ns;
static uint64_t last_look_ns;
static bool chan_waiter(uint64_t now);
/* The earliest deadline set under the lock by the holder (0: none). */
static uint64_t eng_new_due_ns;
/*
 * The thread woke to events while a program's thread held the lock in its
 * data path (a post's pump, a poll): it may leave them to that holder,
 * which takes them before it lets go (take_left), rather than wait on the
 * lock (a futex wake-up in each of the program's unlocks) or yield (see
 * eng_main). LEFT_SLEEPS: the thread sleeps on this word until taken.
 */
enum {
	LEFT_NONE,
	LEFT_EVENTS,
	LEFT_SLEEPS
};
static uint32_t eng_left;
/* Poll mode: a post found the lock held and left its WR to the holder,
 * which pumps as it lets go (posted_after_unlock). */
static uint32_t eng_posted;
/*
 * Under the lock: the thread's round, while thread_place keeps it apart
 * from a program that polls, takes no new WR from a send queue. One the
 * program posts during the round (ib_write_lat: the moment the round
 * placed the Write it answers) is sent by the program, from the CPU where
 * the peer's thread is placed, once the round lets go (post_spin). Sent
 * by the round, it went from the other CPU and woke the peer's thread
 * remotely, and the round, holding the lock 10-50 us for that send, was
 * the next post's wait too (ib_write_lat 64 B, per 10,000 iterations:
 * 7,800 remote wake-ups of a thread by a thread, and 4,400 of a thread
 * by a program; with the hold 180 and 40). A post that gives up waiting
 * leaves its WR to this thread's unlock (posted_after_unlock), which runs
 * without the hold; any other WR goes at the program's next poll, within
 * SWIW_ENG_POLLED_NS. Only the thread's own pumps are held.
 */
static bool eng_sq_hold;
/* Posts waiting for the thread to let go of the lock (post_spin). */
static unsigned int eng_post_spinners;

/*
 * The caller is the progress thread. No thread-local flag: LeakSanitizer's
 * tracer faults on the TLS of a dlopen()ed provider. eng_thread is set
 * under the lock before eng_started.
 */
static bool on_eng_thread(void)
{
	return __atomic_load_n(&eng_started, __ATOMIC_ACQUIRE) &&
	       pthread_equal(pthread_self(), eng_thread);
}

/*
 * A send queue's pump under the lock: true if it must leave the queue's
 * WRs alone (the thread's held round). It marks them as a post that
 * found the lock held does, so that they are sent as the thread lets go,
 * by the post that waits for it or else by the thread, without the
 * hold: none is left for a program that has stopped calling.
 */
bool swiw_eng_sq_held(const struct swiw_qp *qp)
{
	swiw_eng_assert_held();
	if (!eng_sq_hold || !on_eng_thread())
		return false;
	if (swiw_ring_cons_slot(&qp->sq_eng))
		__atomic_store_n(&eng_posted, 1, __ATOMIC_SEQ_CST);
	return true;
}

/*
 * A program's thread runs the engine inside its verbs (a poll, a post),
 * where it makes syscalls that are cancellation points: cancelled there,
 * it would die holding the lock. No cancellation while it is held; the
 * holder's own state comes back as it lets go.
 */
static int eng_cancel_state;

static int cancel_off(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static void eng_lock_raw(void)
{
	int old = cancel_off();

	pthread_mutex_lock(&eng_lock);
	eng_cancel_state = old;
	__atomic_store_n(&eng_owner, (unsigned long)pthread_self(),
			 __ATOMIC_RELAXED);
}

static bool eng_trylock(void);

/*
 * Having let go: a post that found the lock held left its WR to this
 * holder (swiw_engine_sq_posted). The post's store comes before its
 * second trylock, this read-modify-write after the release: either the
 * post took the lock or this sees the mark; and whoever holds the lock
 * now, if not this, lets go through here too. The read-modify-write is
 * left_after_unlock's barrier as well.
 */
static void posted_after_unlock(void)
{
	if (!__atomic_fetch_or(&eng_posted, 0, __ATOMIC_SEQ_CST))
		return;
	/* The thread leaves it to a post waiting for the lock (post_spin),
	 * whose own unlock comes through here: that post counts itself out
	 * before it gives up and marks, so one of the two sends. */
	if (__atomic_load_n(&eng_post_spinners, __ATOMIC_SEQ_CST) &&
	    on_eng_thread())
		return;
	if (!eng_trylock())
		return;
	if (__atomic_exchange_n(&eng_posted, 0, __ATOMIC_SEQ_CST))
		swiw_streams_pump_all();
	swiw_eng_unlock();
}

/*
 * The provider's entry points (modify_qp, destroy, connect) take the lock
 * here and say so: the busy progress thread gives way to them, since a
 * mutex lets the thread that just released it take it again before a
 * sleeping waiter wakes, and a transfer could hold a verb back until it
 * ended.
 */
void swiw_eng_lock(void)
{
	__atomic_fetch_add(&eng_waiters, 1, __ATOMIC_RELAXED);
	eng_lock_raw();
	__atomic_fetch_sub(&eng_waiters, 1, __ATOMIC_RELAXED);
}

/*
 * A holder other than the thread that set a deadline (a peer's EOF that
 * post_send's pump drained, an MPA timer) lets the thread know before it
 * lets go: the thread may sleep in epoll_wait() with no deadline, and the
 * event that set this one is consumed, so nothing else would wake it.
 * The thread itself takes its timeout at the end of every hold.
 */
void swiw_eng_unlock(void)
{
	uint64_t due = eng_new_due_ns;
	int cancel = eng_cancel_state;

	if (due && on_eng_thread())
		due = 0;
	eng_new_due_ns = 0;
	if (due)
		__atomic_store_n(&eng_poll_gen, eng_poll_gen + 1,
				 __ATOMIC_SEQ_CST);
	__atomic_store_n(&eng_owner, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&eng_lock);
	if (due && due < __atomic_load_n(&thread_wake_ns, __ATOMIC_SEQ_CST))
		swiw_eng_doorbell();
	posted_after_unlock();
	pthread_setcancelstate(cancel, NULL);
}

/* Under the lock: something is due at @due_ns (CLOCK_MONOTONIC). */
void swiw_eng_deadline(uint64_t due_ns)
{
	swiw_eng_assert_held();
	if (!eng_new_due_ns || due_ns < eng_new_due_ns)
		eng_new_due_ns = due_ns;
}

/* The engine lock is held by @t (a racy look, unless @t is the caller). */
static bool eng_held_by(pthread_t t)
{
	return __atomic_load_n(&eng_owner, __ATOMIC_RELAXED) ==
	       (unsigned long)t;
}

void swiw_eng_assert_held(void)
{
	if (!eng_held_by(pthread_self())) {
		swiw_err("engine lock not held");
		abort();
	}
}

void swiw_eng_doorbell(void)
{
	uint64_t one = 1;
	int fd = __atomic_load_n(&eng_evfd, __ATOMIC_ACQUIRE);

	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		swiw_warn("engine doorbell: %s", strerror(errno));
}

/* Takes the engine lock only if it is free; true if taken. */
static bool eng_trylock(void)
{
	int old = cancel_off();

	if (pthread_mutex_trylock(&eng_lock)) {
		pthread_setcancelstate(old, NULL);
		return false;
	}
	eng_cancel_state = old;
	__atomic_store_n(&eng_owner, (unsigned long)pthread_self(),
			 __ATOMIC_RELAXED);
	return true;
}

/*
 * Poll mode: a WR posted less than this after the QP's last post_send
 * returned comes from a program posting back to back (a stream, not a
 * ping-pong, whose next post waits a round trip): it waits in the SQ for
 * the next pump, up to SWIW_ENG_CORK_WRS of them, so that one sendmsg()
 * carries many (4 KiB RDMA Writes: 5x the bandwidth with 16 a
 * sendmsg()).
 */
#define SWIW_ENG_CORK_NS 2000
#define SWIW_ENG_CORK_WRS 16 /* the lower half sends 16 frames a sendmsg() */

/*
 * Poll mode: leave the WR just posted to the next pump. That pump comes
 * from the program's next poll of an empty CQ, the post that fills the
 * batch, or the thread, which the SQ's arm rings as for a post that found
 * the engine busy: the WR goes late, never not at all. Not while the
 * program waits on a channel, where only the thread would take it.
 */
static bool app_armed(uint64_t now);

/* A moving mean of the gaps between events, each capped at
 * SWIW_ENG_POLLED_NS. Racing callers may lose an update: a heuristic. */
static void gap_note(uint64_t *mean, uint64_t gap)
{
	if (gap > SWIW_ENG_POLLED_NS)
		gap = SWIW_ENG_POLLED_NS;
	__atomic_store_n(
		mean, (__atomic_load_n(mean, __ATOMIC_RELAXED) * 7 + gap) / 8,
		__ATOMIC_RELAXED);
}

static bool sq_cork(struct swiw_qp *qp)
{
	uint64_t now = swiw_eng_now_ns();
	uint64_t last = __atomic_load_n(&qp->sq_last_ns, __ATOMIC_RELAXED);

	/* Not an exchange, a full barrier on x86: posters racing on one
	 * QP may each see the same last post. */
	__atomic_store_n(&qp->sq_last_ns, now, __ATOMIC_RELAXED);
	/* The QP's own gap: no shared line written per WR. */
	gap_note(&post_gap_ns, now - last);
	if (now - last >= SWIW_ENG_CORK_NS || app_armed(now) ||
	    __atomic_load_n(&qp->sq_corked, __ATOMIC_RELAXED) >=
		    SWIW_ENG_CORK_WRS - 1)
		return false;
	__atomic_fetch_add(&qp->sq_corked, 1, __ATOMIC_RELAXED);
	return true;
}

/*
 * post_send published work. Poll mode: transmit it now from the caller
 * if the engine is free, as a hardware doorbell would start the DMA,
 * unless more are coming right behind it (sq_cork). Otherwise ring if
 * the engine may have gone idle.
 */
static void poller_unlock(bool moved);

/*
 * Poll mode, a post that found the lock held by the thread, which
 * thread_place keeps off the CPU this post runs on: the thread is in a
 * round on the other CPU (ib_write_lat: the one that placed the Write
 * this program answers), which lets go within microseconds, having left
 * the WR alone (eng_sq_hold). Waiting for it, up to
 * SWIW_ENG_POST_SPIN_NS, sends the WR from this CPU, where the peer's
 * thread is placed: its wake-up is then local; left to the holder, it is
 * sent from the other CPU and wakes the peer's thread remotely. Not on a
 * CPU the holder may share: there the wait would only delay it.
 */
#define SWIW_ENG_POST_SPIN_NS 10000

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static bool post_spin(void)
{
	int cpu = __atomic_load_n(&eng_cpu_off, __ATOMIC_RELAXED);
	uint64_t end;

	if (cpu < 0 || !eng_held_by(eng_thread) || sched_getcpu() != cpu)
		return false;
	__atomic_fetch_add(&eng_post_spinners, 1, __ATOMIC_SEQ_CST);
	end = swiw_eng_now_ns() + SWIW_ENG_POST_SPIN_NS;
	do {
		cpu_relax();
		if (!__atomic_load_n(&eng_owner, __ATOMIC_RELAXED) &&
		    eng_trylock()) {
			__atomic_fetch_sub(&eng_post_spinners, 1,
					   __ATOMIC_SEQ_CST);
			return true;
		}
	} while (swiw_eng_now_ns() < end);
	__atomic_fetch_sub(&eng_post_spinners, 1, __ATOMIC_SEQ_CST);
	return false;
}

void swiw_engine_sq_posted(struct swiw_qp *qp)
{
	bool locked = false;

	if (eng_poll_mode && !sq_cork(qp)) {
		locked = eng_trylock();
		/* Held: its holder pumps as it lets go. A bell instead would
		 * wake the thread for a WR its round has mostly sent already,
		 * from whatever CPU this runs on (ib_write_lat: the program
		 * posts the moment the thread's round places the Write). */
		if (!locked)
			locked = post_spin();
		if (!locked) {
			__atomic_store_n(&qp->sq_armed, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&eng_posted, 1, __ATOMIC_SEQ_CST);
			/* Taken now: the mark stays, for a post on another QP
			 * that may have left its WR to this hold meanwhile;
			 * this unlock's pump takes it. */
			locked = eng_trylock();
			if (!locked)
				return;
		}
	}
	if (locked) {
		bool taken = false;

		if (qp->stream) {
			swiw_stream_pump(qp->stream);
			taken = !swiw_ring_cons_slot(&qp->sq_eng) ||
				qp->stream->tx_full || qp->stream->rd_wait;
		}
		__atomic_store_n(&qp->sq_corked, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&qp->sq_last_ns, swiw_eng_now_ns(),
				 __ATOMIC_RELAXED);
		poller_unlock(false);
		/* The pump took every WR (a message half out comes back on
		 * EPOLLOUT), or left them behind a full transmit ring that
		 * the transport's room empties: a WR another thread posts
		 * behind it finds the SQ armed and rings for itself, and a
		 * bell here would only wake the thread for nothing, once
		 * per message. So do WRs behind a Read or Atomic Response
		 * (ORD full, a fence): whoever takes the response pumps
		 * (link_event). WRs left for another reason (a stream
		 * still setting up) ring. */
		if (!taken)
			swiw_eng_doorbell();
		return;
	}
	if (__atomic_exchange_n(&qp->sq_armed, 0, __ATOMIC_SEQ_CST))
		swiw_eng_doorbell();
}

/* The helper's file joins the epoll set with its first stream. */
void swiw_eng_watch_helper(int fd)
{
	swiw_eng_assert_held();
	if (helper_watched)
		return;
	if (swiw_eng_epoll_ctl(EPOLL_CTL_ADD, fd, EPOLLIN, &helper_tag)) {
		swiw_err("cannot watch the kernel helper's events");
	} else {
		helper_fd = fd;
		helper_watched = true;
	}
}

int swiw_eng_epoll_ctl(int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	swiw_eng_assert_held();
	return epoll_ctl(eng_epfd, op, fd, &ev) ? errno : 0;
}

/* Takes the doorbell's count; EAGAIN: already drained. */
static void bell_drain(void)
{
	uint64_t v;

	if (read(eng_evfd, &v, sizeof(v)) < 0)
		(void)0;
}

/*
 * Handles one epoll_wait()'s events; under the engine lock. Returns
 * whether anything moved: an event other than the doorbell, or a pump
 * that sent or took something. The doorbell is the thread's alone: a
 * poller that drained it could leave the thread asleep past a dial or
 * timer it was rung for.
 */
static bool eng_events(const struct epoll_event *evs, int n, bool thread)
{
	struct swiw_stream *st;
	bool input = false;
	uint64_t in;
	int i, real = 0;

	for (i = 0; i < n; i++) {
		if (evs[i].data.ptr == &doorbell_tag) {
			if (thread)
				bell_drain();
			continue;
		}
		real++;
		if (evs[i].data.ptr == &helper_tag) {
			swiw_streams_kernel_event();
			continue;
		}
		if (swiw_conn_is_broker(evs[i].data.ptr)) {
			swiw_conn_broker_event(evs[i].data.ptr);
			continue;
		}
		st = evs[i].data.ptr;
		in = st->in_total;
		swiw_stream_event(st, evs[i].events);
		input |= st->in_total != in;
	}
	if (thread && input)
		thread_takes++;
	return swiw_streams_pump_all() || real > 0;
}

/* The next deadline of dials and streams, in ms from now, or -1. */
static int eng_timeout_ms(void)
{
	int wait_ms = swiw_conn_timeout_ms(), t = swiw_streams_timers();

	if (t >= 0 && (wait_ms < 0 || t < wait_ms))
		wait_ms = t;
	return wait_ms;
}

/*
 * A poller handled events that may have set a deadline (a peer's EOF, a
 * hand-over): wake the thread if it sleeps past it, so the deadline is
 * kept when the program stops polling.
 */
static void wake_for_timers(int t)
{
	uint64_t wake = __atomic_load_n(&thread_wake_ns, __ATOMIC_SEQ_CST);

	if (t >= 0 && swiw_eng_now_ns() + (uint64_t)t * 1000000u < wake)
		swiw_eng_doorbell();
}

static bool poller_run(bool *bell_only);

/*
 * Under the lock, a program's thread in its data path: runs the engine
 * for the events the thread left to it. Returns what eng_left held.
 */
static uint32_t take_left(bool *moved)
{
	uint32_t left;
	bool bell_only;

	/* Mostly none: no full barrier per poll for that. One this misses
	 * is found by left_after_unlock, whose read-modify-write is. */
	if (__atomic_load_n(&eng_left, __ATOMIC_RELAXED) == LEFT_NONE)
		return LEFT_NONE;
	left = __atomic_exchange_n(&eng_left, LEFT_NONE, __ATOMIC_SEQ_CST);
	if (left != LEFT_NONE)
		*moved |= poller_run(&bell_only);
	return left;
}

static void left_wake(uint32_t left)
{
	if (left == LEFT_SLEEPS)
		syscall(SYS_futex, &eng_left, FUTEX_WAKE_PRIVATE, 1, NULL, NULL,
			0);
}

static void poller_unlock_once(bool moved);

/*
 * Having let go: the thread may have left its events after this holder
 * looked (its trylock failed on this hold). Its store comes before its
 * trylock, this load after the release: one of the two sees the other.
 */
static void left_after_unlock(void)
{
	/* swiw_eng_unlock's read-modify-write (posted_after_unlock) was the
	 * full barrier after the release: a load will do, one locked
	 * instruction less on every poll. */
	if (__atomic_load_n(&eng_left, __ATOMIC_SEQ_CST) != LEFT_NONE &&
	    eng_trylock())
		poller_unlock_once(false);
}

/*
 * An application thread that ran the engine lets go, having taken what
 * the thread left it: if it handled events (@moved), the thread, about
 * to sleep or asleep, learns of any deadline they set.
 */
static void poller_unlock(bool moved)
{
	poller_unlock_once(moved);
	left_after_unlock();
}

static void poller_unlock_once(bool moved)
{
	uint32_t left = take_left(&moved);
	int t = -1;

	/* A thread not in thread_wait (thread_wake_ns 0) sees the bump
	 * before it sleeps there: its timeout need not be worked out. */
	if (moved) {
		__atomic_store_n(&eng_poll_gen, eng_poll_gen + 1,
				 __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&thread_wake_ns, __ATOMIC_SEQ_CST))
			t = eng_timeout_ms();
	}
	swiw_eng_unlock();
	wake_for_timers(t);
	left_wake(left);
}

/*
 * A program's thread, holding the lock, runs the engine once and says
 * whether it moved anything; *bell_only: the doorbell alone was ready,
 * and stays so until the thread drains it.
 */
static bool poller_run(bool *bell_only)
{
	struct epoll_event evs[64];
	int n = epoll_wait(eng_epfd, evs, 64, 0);
	bool moved = eng_events(evs, n, false);

	*bell_only = n > 0 && !moved;
	return moved;
}

/* @ts (one of the program's times) is less than @window before @now. */
static bool within(const uint64_t *ts, uint64_t now, uint64_t window)
{
	return (int64_t)(now - __atomic_load_n(ts, __ATOMIC_RELAXED)) <
	       (int64_t)window;
}

/*
 * A program's thread runs the engine once if the lock is free: the
 * helper's event rings (memory), the streams' sockets read directly, and
 * every SWIW_ENG_DIRECT_EVERY-th time the whole epoll set. The
 * epoll_wait() is under the lock, so no stream it names can be freed
 * before its events are handled. @now: when the caller looked, the time
 * a direct read that takes input is noted at (a heuristic's window of
 * SWIW_ENG_MUTE_HOLD_NS: a clock read less on the path of a message).
 */
static void poll_once(uint64_t now)
{
	bool moved = false, input = false, bell_only, direct;

	if (!eng_trylock()) {
		__atomic_store_n(&eng_poll_wanted, true, __ATOMIC_RELAXED);
		/* The thread is moving the data, the program having stopped
		 * polling for a while (descheduled behind its peer on a
		 * shared CPU): spinning on its lock would take that CPU from
		 * the peer, or from the thread. ib_send_bw 1 MiB: 1.3-1.5x
		 * with the yield. */
		if (eng_held_by(eng_thread))
			sched_yield();
		return;
	}
	if (helper_watched)
		moved = swiw_streams_kernel_event();
	direct = ++eng_polls % (socks_muted ? SWIW_ENG_DIRECT_EVERY_MUTED :
					      SWIW_ENG_DIRECT_EVERY) &&
		 (helper_watched || swiw_stream_poll_direct(&moved, &input));
	if (!direct)
		moved |= poller_run(&bell_only);
	else if (input) {
		__atomic_store_n(&last_direct_ns, now, __ATOMIC_RELAXED);
		/* Written under the lock alone: no locked add. */
		__atomic_store_n(&direct_takes, direct_takes + 1,
				 __ATOMIC_RELAXED);
	}
	poller_unlock(moved);
}

/*
 * Poll mode: an application thread found its CQ empty. Returns the time
 * it read, for swiw_engine_polled (0: none).
 */
uint64_t swiw_engine_poll(void)
{
	uint64_t now;

	if (!eng_poll_mode || !__atomic_load_n(&eng_started, __ATOMIC_ACQUIRE))
		return 0;
	now = swiw_eng_now_ns();
	if (__atomic_load_n(&last_poll_ns, __ATOMIC_RELAXED) !=
	    __atomic_load_n(&last_empty_ns, __ATOMIC_RELAXED))
		__atomic_store_n(&empty_since_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&last_poll_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&last_empty_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&app_cpu, sched_getcpu(), __ATOMIC_RELAXED);
	poll_once(now);
	return now;
}

/*
 * The thread holds the lock and a poller wants it: a stream's receive
 * stops at its next round (swiw_stream_lower.c), so that the program
 * runs the engine itself rather than spin until the thread lets go.
 */
bool swiw_eng_poller_waits(void)
{
	return __atomic_load_n(&eng_poll_wanted, __ATOMIC_RELAXED);
}

/*
 * poll_cq found @n completions: the program is polling all the same.
 * @now: swiw_engine_poll's time, if it ran the engine just before (the
 * poll found the completion it made), else 0.
 */
void swiw_engine_polled(int n, uint64_t now)
{
	if (!eng_poll_mode)
		return;
	if (!now) {
		now = swiw_eng_now_ns();
		__atomic_store_n(&app_cpu, sched_getcpu(), __ATOMIC_RELAXED);
	}
	__atomic_store_n(&last_poll_ns, now, __ATOMIC_RELAXED);
	gap_note(&found_gap_ns, now - __atomic_exchange_n(&last_found_ns, now,
							  __ATOMIC_RELAXED));
	if (n >= 2)
		__atomic_store_n(&eng_deep_ns, now, __ATOMIC_RELAXED);
}

/*
 * A CQ was armed: its program may be about to block on the channel, and
 * then the thread must take over at once, not after a long nap.
 */
void swiw_engine_armed(void)
{
	uint64_t now;

	if (!eng_poll_mode)
		return;
	now = swiw_eng_now_ns();
	__atomic_store_n(&last_arm_ns, now, __ATOMIC_RELAXED);
	/* The thread does not hear the helper: it must, before the program
	 * blocks. The arm word was exchanged before (sequentially
	 * consistent), helper_mute sets the flag before it reads the arm
	 * words: one of the two sees the other. */
	if (__atomic_load_n(&helper_muted, __ATOMIC_SEQ_CST)) {
		swiw_eng_doorbell();
		return;
	}
	/* One that looks at its channel from its own thread (a look
	 * found a record just now) moves the engine there: no bell. */
	if (!chan_waiter(now) &&
	    __atomic_load_n(&thread_long_nap, __ATOMIC_SEQ_CST))
		swiw_eng_doorbell();
}

/*
 * Poll mode: the program is about to block in ibv_get_cq_event on @ch.
 * For SWIW_ENG_SPIN_NS its thread runs the engine as a polling program's
 * does (poll_once: the sockets read directly, no epoll_wait but one time
 * in SWIW_ENG_DIRECT_EVERY) and returns as soon as @ch has a record
 * (libibverbs's read then takes it), or when the time is up, and then the
 * read sleeps and the thread serves the sockets as before. A record
 * written before the look is in the pipe, and one ppoll finds it; one
 * written after bumps ch->posted, which is memory: no syscall per turn
 * for the pipe (send_lat_ev 2 B: 4.6 -> 4.0 us a hop). Nothing here
 * sleeps and no cancellation point is reached: cancellation is off
 * throughout, and a program that cancels a thread blocked in
 * ibv_get_cq_event (rping does on an error path) has it acted on in
 * libibverbs's read. The look is not a poll of the program's: it leaves
 * the times the thread judges polling programs by alone.
 */
struct ibv_cq *swiw_engine_chan_wait(struct swiw_comp_channel *ch)
{
	struct pollfd p = { .fd = ch->ibv_ch.fd, .events = POLLIN };
	struct timespec zero = { 0 };
	uint32_t look = SWIW_LOOK_NONE;
	struct ibv_cq *handed = NULL;
	unsigned long posted;
	bool got = false, taker;
	uint64_t until, now;
	int cancel;

	if (!eng_poll_mode || !__atomic_load_n(&eng_started, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	/* One looker at a time is handed records; others see the pipe's. */
	taker = __atomic_compare_exchange_n(&ch->look, &look, SWIW_LOOK_ACTIVE,
					    false, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED);
	__atomic_fetch_add(&eng_chan_waiters, 1, __ATOMIC_SEQ_CST);
	/* The set this looks at must hear the helper again. */
	if (__atomic_load_n(&helper_muted, __ATOMIC_SEQ_CST))
		swiw_eng_doorbell();
	now = swiw_eng_now_ns();
	__atomic_store_n(&last_look_ns, now, __ATOMIC_RELAXED);
	until = now + SWIW_ENG_SPIN_NS;
	posted = __atomic_load_n(&ch->posted, __ATOMIC_ACQUIRE);
	/* A record, or an error the read reports. */
	if (ppoll(&p, 1, &zero, NULL) > 0)
		got = true;
	for (; !got && now < until; now = swiw_eng_now_ns()) {
		poll_once(now);
		got = __atomic_load_n(&ch->posted, __ATOMIC_ACQUIRE) !=
			      posted ||
		      (taker && __atomic_load_n(&ch->look, __ATOMIC_RELAXED) !=
					SWIW_LOOK_ACTIVE);
	}
	/* A completion that claimed the hand-over before this ends it
	 * finishes it: its record is this look's. */
	look = SWIW_LOOK_ACTIVE;
	if (taker && !__atomic_compare_exchange_n(
			     &ch->look, &look, SWIW_LOOK_NONE, false,
			     __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&ch->look, __ATOMIC_ACQUIRE) !=
		       SWIW_LOOK_HANDED)
			sched_yield();
		handed = ch->handed;
		__atomic_store_n(&ch->look, SWIW_LOOK_NONE, __ATOMIC_RELEASE);
		got = true;
	}
	/* Found: the program comes back for the next one soon. Not: it
	 * sleeps in read(), and the sockets are the thread's again now. */
	__atomic_store_n(&last_chan_ns, got ? swiw_eng_now_ns() : 0,
			 __ATOMIC_SEQ_CST);
	__atomic_fetch_sub(&eng_chan_waiters, 1, __ATOMIC_SEQ_CST);
	if (!got && __atomic_load_n(&thread_long_nap, __ATOMIC_SEQ_CST))
		swiw_eng_doorbell();
	pthread_setcancelstate(cancel, NULL);
	return handed;
}

/*
 * The nap of a thread whose program polls empty CQs: the doorbell alone
 * ends it early (swiw_engine_armed, a verb's ring), never a socket, whose
 * data the program takes itself. True if it took a ring: the thread owes
 * a round under the lock, which the ring no longer recalls.
 */
static bool bell_nap(uint64_t ns, bool bell)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };
	struct pollfd pfd = { .fd = eng_evfd, .events = POLLIN };
	bool rang = false;

	if (ns <= SWIW_ENG_NAP_NS && !bell) {
		nanosleep(&ts, NULL);
		return false;
	}
	__atomic_store_n(&thread_long_nap, true, __ATOMIC_SEQ_CST);
	/* Drain the bell that ended it: left readable, it would end every
	 * nap after it at once. What it rang for runs next, under the lock. */
	if (ppoll(&pfd, 1, &ts, NULL) > 0) {
		bell_drain();
		rang = true;
	}
	__atomic_store_n(&thread_long_nap, false, __ATOMIC_RELAXED);
	return rang;
}

/*
 * The thread, while a program polls: the lock if it is free and no verb
 * waits for it (swiw_eng_lock), never a wait behind the program.
 */
static bool thread_trylock(void)
{
	return !__atomic_load_n(&eng_waiters, __ATOMIC_RELAXED) &&
	       eng_trylock();
}

/*
 * The thread's wait for the lock: a verb waiting for it goes first, and
 * the thread never queues on the mutex. Queued, it would be woken by
 * every unlock of a program that polls in a loop and takes the lock back
 * before the thread runs: on ib_write_bw 64 KiB, 5,300 futex wake-ups of
 * the sender's thread per 60,000 Writes, each a context switch on the
 * CPU where the receiver places. It retries instead after naps that
 * double up to SWIW_ENG_LOCK_NAP_MAX_NS; never after sched_yield(), which
 * puts the thread's EEVDF deadline a slice ahead, so that it then waits
 * behind a program spinning on its CPU until the tick (1-5 ms), woken or
 * not (see SWIW_ENG_YIELD_NAP_NS).
 */
#define SWIW_ENG_LOCK_NAP_NS 2000
#define SWIW_ENG_LOCK_NAP_MAX_NS 200000

static void thread_lock(void)
{
	struct timespec ts = { 0, SWIW_ENG_LOCK_NAP_NS };

	for (;;) {
		if (thread_trylock())
			return;
		nanosleep(&ts, NULL);
		if (ts.tv_nsec < SWIW_ENG_LOCK_NAP_MAX_NS)
			ts.tv_nsec *= 2;
	}
}

/* A CQ was armed lately: the program waits on a channel between polls. */
static bool app_armed(uint64_t now)
{
	return within(&last_arm_ns, now, SWIW_ENG_POLLED_NS);
}

/*
 * Poll mode: the program drove the engine within @window of @now and
 * armed no CQ meanwhile. One that arms (rping, ib_send_lat -e) polls a
 * CQ empty only to block on its channel next, and then the thread is
 * what moves its data.
 */
static bool app_drove(uint64_t now, uint64_t window)
{
	return eng_poll_mode && within(&last_poll_ns, now, window) &&
	       !app_armed(now);
}

/*
 * Poll mode: a program was driving the engine when the thread last woke.
 * Not "now": sharing a CPU with the thread, the program cannot poll while
 * the thread works.
 */
static bool app_polling(uint64_t woke)
{
	return app_drove(woke, SWIW_ENG_POLLING_NS);
}

/*
 * The program feeds a queue of WRs (ib_write_bw, ib_read_bw), posts or
 * takes completions in a stream (ib_send_bw's two sides: less than
 * SWIW_ENG_STREAM_NS apart on average): what the thread woke to is that
 * stream, and the program polls for it. A yield parks the thread behind
 * it until it polls, and its poll then handles a batch; taking each
 * event as it comes costs a preemption and a small sendmsg() apiece
 * (4 KiB Sends at half the rate). A program with one WR at a time
 * (ib_write_lat) leaves neither trace.
 */
static bool app_streams(uint64_t woke)
{
	return within(&eng_deep_ns, woke, SWIW_ENG_POLLED_NS) ||
	       __atomic_load_n(&post_gap_ns, __ATOMIC_RELAXED) <
		       SWIW_ENG_STREAM_NS ||
	       __atomic_load_n(&found_gap_ns, __ATOMIC_RELAXED) <
		       SWIW_ENG_STREAM_NS;
}

/*
 * Poll mode: the program found a CQ empty recently, so it waits for
 * completions by polling and takes what comes itself. One that only
 * finds completions (ib_write_lat reaps its send CQ, then spins on
 * memory) may need the thread to place what comes.
 */
static bool app_waits(uint64_t woke)
{
	if (!within(&last_empty_ns, woke, SWIW_ENG_POLLING_NS))
		return false;
	/* Its last poll found the CQ empty: one that then found what it
	 * waited for went on (to spin on memory, perhaps), unless it
	 * streams, and polls again for the next. */
	return __atomic_load_n(&last_empty_ns, __ATOMIC_RELAXED) ==
		       __atomic_load_n(&last_poll_ns, __ATOMIC_RELAXED) ||
	       app_streams(woke);
}

/*
 * Poll mode: app_waits, and has found its CQs empty for some time: it
 * waits for a peer (ib_send_lat), not for a post it made (ib_write_lat
 * polls its send CQ until the pump it raced sends the Write).
 */
static bool app_waits_long(uint64_t woke)
{
	return app_waits(woke) &&
	       !within(&empty_since_ns, woke, SWIW_ENG_WAITING_NS);
}

void swiw_eng_note_deep(void)
{
	__atomic_store_n(&eng_deep_ns, swiw_eng_now_ns(), __ATOMIC_RELAXED);
}

/* Poll mode: the program drove the engine within SWIW_ENG_POLLED_NS. */
static bool app_polled(uint64_t now)
{
	return app_drove(now, SWIW_ENG_POLLED_NS);
}

/* A program thread is in a look at its channel, moving the engine. */
static bool chan_waits(void)
{
	return __atomic_load_n(&eng_chan_waiters, __ATOMIC_SEQ_CST) != 0;
}

/*
 * Poll mode: a program looks at its channel from its own thread now, or
 * is between two looks (one found a record within SWIW_ENG_CHAN_NS).
 */
static bool chan_waiter(uint64_t now)
{
	return eng_poll_mode &&
	       (chan_waits() || within(&last_chan_ns, now, SWIW_ENG_CHAN_NS));
}

/* Poll mode: the program's last poll found completions. */
static bool app_took_last(void)
{
	return eng_poll_mode &&
	       __atomic_load_n(&last_empty_ns, __ATOMIC_RELAXED) !=
		       __atomic_load_n(&last_poll_ns, __ATOMIC_RELAXED);
}

/*
 * The program polled within SWIW_ENG_MUTE_POLLED_NS and does not look at
 * a channel: it takes the helper's events itself, unless it also waits
 * on a channel (helper_mute).
 */
static bool mute_still(uint64_t now)
{
	return eng_poll_mode &&
	       within(&last_poll_ns, now, SWIW_ENG_MUTE_POLLED_NS) &&
	       !chan_waiter(now);
}

/*
 * Under the lock, the thread: while a program polls, and no CQ of a stream
 * is armed, its polls read the helper's event rings themselves (a CQ
 * armed is a program that waits on a channel, or will: the thread must
 * hear what completes there), so the file leaves the
 * thread's set; else each completion the helper posts would wake the
 * thread, to find the work done, and on a CPU it shares with the program
 * preempt it (a switch per message of ib_write_lat, which made it 3-5x
 * siw's latency in the VM lab). Muted, the thread sleeps up to
 * SWIW_ENG_MUTED_NS at a time and only looks whether the program still
 * polls; arming a CQ or looking at a channel rings it. The flag is set
 * before the arm words are read again, and swiw_req_notify_cq stores the
 * word before swiw_engine_armed reads the flag: one sees the other.
 */
static void helper_mute(void)
{
	bool on;

	if (!helper_watched)
		return;
	on = mute_still(swiw_eng_now_ns()) && !swiw_streams_cq_armed();
	if (on && !helper_muted) {
		__atomic_store_n(&helper_muted, true, __ATOMIC_SEQ_CST);
		on = mute_still(swiw_eng_now_ns()) && !swiw_streams_cq_armed();
		if (on && swiw_eng_epoll_ctl(EPOLL_CTL_MOD, helper_fd, 0,
					     &helper_tag))
			on = false;
		if (!on)
			__atomic_store_n(&helper_muted, false,
					 __ATOMIC_SEQ_CST);
	} else if (!on && helper_muted) {
		if (swiw_eng_epoll_ctl(EPOLL_CTL_MOD, helper_fd, EPOLLIN,
				       &helper_tag))
			swiw_err("cannot watch the kernel helper's events");
		__atomic_store_n(&helper_muted, false, __ATOMIC_SEQ_CST);
	}
}

/* Among the events of the thread's wait: the helper's file (not muted). */
static bool helper_woke(const struct epoll_event *evs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (evs[i].data.ptr == &helper_tag)
			return true;
	return false;
}

/* The program's polls took its stream's input lately: it polls on. */
static bool mute_holds(uint64_t now)
{
	return within(&last_direct_ns, now, SWIW_ENG_MUTE_HOLD_NS);
}

/* A socket is out of the set, and the program that reads it still does. */
static bool muted_polls(uint64_t now)
{
	return socks_muted && mute_holds(now);
}

/*
 * Under the lock, the thread: while a program reads its one stream's
 * socket itself (swiw_stream_poll_direct) and arms no CQ, the socket
 * leaves the epoll set. TCP wakes a socket's waiters for every
 * segment it queues, under the socket's lock, which on loopback the
 * sender holds while the receiver's recvmsg spins for it: in an epoll set,
 * each message pays ep_poll_callback on that path. Muted, the thread naps
 * on the doorbell alone, longer and longer, and brings the socket back
 * before it waits on the set (sock_unmute). ib_send_lat 2 B: 0.15 us less
 * a hop, and a tenth of the context switches.
 */
static void sock_mute(uint64_t now)
{
	static unsigned long seen_direct, seen_thread;
	unsigned long d = __atomic_load_n(&direct_takes, __ATOMIC_RELAXED),
		      t = thread_takes;
	bool on = mute_holds(now) && !chan_waiter(now) && !app_armed(now) &&
		  !swiw_streams_cq_armed();

	/* Since the last round: the program took its input, the thread
	 * (almost) none. One that spins on memory for what the thread
	 * places (ib_write_lat) keeps its socket in the set. */
	if (!socks_muted)
		on = on && d - seen_direct >=
				   SWIW_ENG_MUTE_RATIO * (t - seen_thread) + 1;
	seen_direct = d;
	seen_thread = t;
	if (on || socks_muted)
		socks_muted = swiw_streams_sock_mute(on);
}

/*
 * The thread is about to wait on its epoll set: the sockets come back
 * first, under the lock (@wait: waiting for it). False if the lock was
 * taken: a program holds it, and polls.
 */
static bool sock_unmute(bool wait)
{
	if (!socks_muted)
		return true;
	if (wait)
		eng_lock_raw();
	else if (!thread_trylock())
		return false;
	socks_muted = swiw_streams_sock_mute(false);
	swiw_eng_unlock();
	return true;
}

/*
 * epoll_pwait2 (Linux 5.11) waits to the nanosecond. A kernel without it
 * (ENOSYS: an older one, or valgrind's) gets a ppoll of the epoll file,
 * as precise, then epoll_wait for what the file holds: without this the
 * thread would never hear its set, and a program blocked on a channel
 * would wait for ever.
 */
static int eng_epoll_wait(struct epoll_event *evs, int max,
			  const struct timespec *tp)
{
	static bool no_pwait2;
	struct pollfd p = { .fd = eng_epfd, .events = POLLIN };
	int n;

	if (!__atomic_load_n(&no_pwait2, __ATOMIC_RELAXED)) {
		n = epoll_pwait2(eng_epfd, evs, max, tp, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n;
		__atomic_store_n(&no_pwait2, true, __ATOMIC_RELAXED);
		swiw_info("no epoll_pwait2 in this kernel: ppoll, then "
			  "epoll_wait");
	}
	n = ppoll(&p, 1, tp, NULL);
	if (n <= 0)
		return n;
	return epoll_wait(eng_epfd, evs, max, 0);
}

/*
 * The thread waits on its epoll set until @until (UINT64_MAX: no time
 * limit), and says so in thread_wake_ns for wake_for_timers. A poller
 * that handled events since @seen_gen was taken may have set a deadline
 * and seen the thread still awake; with @owed, a nap took a ring the
 * thread has not answered: either way it only looks. epoll's count;
 * *woke: when it woke.
 */
static int thread_wait(struct epoll_event *evs, uint64_t now, uint64_t until,
		       bool owed, uint32_t seen_gen, uint64_t *woke)
{
	struct timespec t, *tp = NULL;
	int n;

	__atomic_store_n(&thread_wake_ns, until, __ATOMIC_SEQ_CST);
	if (owed ||
	    __atomic_load_n(&eng_poll_gen, __ATOMIC_SEQ_CST) != seen_gen)
		until = now;
	if (until != UINT64_MAX) {
		uint64_t ns = until > now ? until - now : 0;

		t.tv_sec = (time_t)(ns / 1000000000u);
		t.tv_nsec = (long)(ns % 1000000000u);
		tp = &t;
	}
	n = eng_epoll_wait(evs, 64, tp);
	*woke = swiw_eng_now_ns();
	__atomic_store_n(&thread_wake_ns, 0, __ATOMIC_RELAXED);
	return n;
}

/*
 * Muted: sleeps on the rest of the set (the doorbell, the broker, the
 * sockets of streams being set up) until @due, a deadline, or
 * SWIW_ENG_MUTED_NS. True if it woke to nothing and the program still
 * polls: the thread sleeps again without the lock, which the program
 * takes at every poll.
 */
static bool muted_nap(uint64_t due, uint32_t seen_gen, struct epoll_event *evs,
		      int *n)
{
	uint64_t now = swiw_eng_now_ns();

	*n = 0;
	if (!mute_still(now) || now >= due)
		return false;
	*n = thread_wait(
		evs, now,
		due - now < SWIW_ENG_MUTED_NS ? due : now + SWIW_ENG_MUTED_NS,
		false, seen_gen, &now);
	if (*n < 0)
		*n = 0;
	return !*n && mute_still(now) && now < due &&
	       __atomic_load_n(&eng_poll_gen, __ATOMIC_SEQ_CST) == seen_gen;
}

/*
 * The thread woke to events and found the lock held: it leaves them to
 * the holder (eng_left) and sleeps until taken. True if taken; false
 * with *@locked if the lock came free first, or with the lock still to
 * be waited for: a holder outside the data path (a verb) takes nothing.
 */
static bool leave_events(bool *locked)
{
	struct timespec ts = { 0, SWIW_ENG_LEFT_NS };
	uint32_t left = LEFT_EVENTS;

	*locked = false;
	__atomic_exchange_n(&eng_left, LEFT_EVENTS, __ATOMIC_SEQ_CST);
	if (thread_trylock()) {
		__atomic_store_n(&eng_left, LEFT_NONE, __ATOMIC_SEQ_CST);
		*locked = true;
		return false;
	}
	if (__atomic_compare_exchange_n(&eng_left, &left, LEFT_SLEEPS, false,
					__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &eng_left, FUTEX_WAIT_PRIVATE, LEFT_SLEEPS,
			&ts, NULL, 0);
	return __atomic_exchange_n(&eng_left, LEFT_NONE, __ATOMIC_SEQ_CST) ==
	       LEFT_NONE;
}

/*
 * Where the thread runs. A program that polls spins on a CPU; a Write it
 * waits for in memory (ib_write_lat) is placed by this thread, and a
 * thread woken on that CPU must preempt the program, which a wake-up from
 * another CPU does late: the sender's CPU, where TCP wakes the thread,
 * has to interrupt the spinning one (tcp_ref lat -T, 64 B, with both ends'
 * placing threads each on its own program's CPU: 68 us a hop; each on the
 * other's, where the peer's send wakes it: 8.5 us). While the program
 * polls, the thread keeps off the CPU it last polled from, if the CPUs it
 * was started with leave it another; it gets them all back when the
 * program stops polling. @cpus: that set; the CPU now left out is
 * eng_cpu_off; *@fixed: the set cannot be changed (a cpuset that moved,
 * or one CPU only).
 */
static void thread_place(const cpu_set_t *cpus, bool *fixed, uint64_t now)
{
	int want = -1;
	cpu_set_t set;

	if (*fixed)
		return;
	/* The window of helper_mute: ib_write_lat's polls can be far apart.
	 * The same for arms: a program that blocks on a channel (and may
	 * have slept in it past SWIW_ENG_POLLED_NS) does not spin. */
	if (mute_still(now) &&
	    !within(&last_arm_ns, now, SWIW_ENG_MUTE_POLLED_NS))
		want = __atomic_load_n(&app_cpu, __ATOMIC_RELAXED);
	if (want >= 0 && (want >= CPU_SETSIZE || !CPU_ISSET(want, cpus)))
		want = -1;
	if (want == eng_cpu_off)
		return;
	set = *cpus;
	if (want >= 0)
		CPU_CLR(want, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		swiw_dbg("progress thread stays where it is: %s",
			 strerror(errno));
		*fixed = true;
		return;
	}
	__atomic_store_n(&eng_cpu_off, want, __ATOMIC_RELAXED);
}

static void *eng_main(void *arg)
{
	struct epoll_event evs[64];
	uint64_t spin_until = 0, woke = 0, due = UINT64_MAX, mute_tried = 0;
	int n, wait_ms = -1, busy_naps = 0;
	/* Spin rounds, for the direct reads; what the last one moved. */
	unsigned int spin_rounds = 0;
	bool direct = false, input;
	uint64_t nap_ns = SWIW_ENG_NAP_NS;
	uint32_t seen_gen = 0;
	/* A nap took a ring and the lock was not had since: wait_ms and the
	 * bell no longer tell the thread that it has work. */
	bool owed = false;
	/* The last round under the lock moved something. */
	bool placed = false;
	/* thread_place's: the CPUs it started with. */
	cpu_set_t cpus;
	/* One CPU: nowhere to go. Counted once, not every round (115
	 * instructions a Read Response, callgrind). */
	bool cpus_fixed = sched_getaffinity(0, sizeof(cpus), &cpus) != 0 ||
			  CPU_COUNT(&cpus) < 2;

	(void)arg;
	/* Naps of tens of microseconds: the default 50 us slack would
	 * double them. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	/* Named for top -H, perf and gdb: the program's threads keep its
	 * own name. */
	prctl(PR_SET_NAME, "swiw-engine", 0, 0, 0);
	for (;;) {
		bool work;

		thread_place(&cpus, &cpus_fixed, swiw_eng_now_ns());
		if (helper_muted) {
			n = 0;
			if (!owed && muted_nap(due, seen_gen, evs, &n))
				continue;
			woke = swiw_eng_now_ns();
			/* Events, a deadline, or the program stopped polling:
			 * the lock, and helper_mute decides again. */
		} else if (app_polling(woke) || chan_waiter(woke) ||
			   muted_polls(woke)) {
			/* Muted, a program preempted past SWIW_ENG_POLLING_NS
			 * (by this very thread on its CPU) still polls: to
			 * bring its socket back for that would cost every
			 * message an ep_poll_callback until the mute held
			 * again (ib_send_lat: a third of the time unmuted,
			 * 0.05x TCP a hop). */
			/* Timers and dials still run, at nap granularity. */
			struct timespec nap = { 0, SWIW_ENG_NAP_NS };

			n = 0;
			/* The thread's own round moved something: the
			 * program may have polled empty only for the lock
			 * that round held, and go on to spin on memory;
			 * one that streams polls again. */
			if (!chan_waiter(woke) && !muted_polls(woke) &&
			    ((placed && !app_streams(woke)) ||
			     !app_waits(woke))) {
				/* It took completions and has not polled an
				 * empty CQ since: it may be spinning on memory
				 * (ib_write_lat) for what the thread must
				 * place. Nap on the sockets; what comes while
				 * it still has not polled is the thread's. */
				placed = false;
				n = -1;
				if (sock_unmute(false))
					n = eng_epoll_wait(evs, 64, &nap);
				woke = swiw_eng_now_ns();
				if (n > 0 && app_waits(woke))
					continue; /* its own poll takes them */
				if (n > 0 && thread_trylock()) {
					busy_naps = 0;
					goto locked;
				}
				if (n < 0)
					nanosleep(&nap, NULL);
				n = 0;
			} else {
				/* A look that gives up rings: short naps too
				 * end on the bell while a program looks. */
				if (bell_nap(nap_ns, chan_waiter(woke)))
					owed = true;
				woke = swiw_eng_now_ns();
				if (chan_waiter(woke)) {
					if (nap_ns < SWIW_ENG_CHAN_NAP_NS)
						nap_ns *= 2;
				} else if ((app_polling(woke) &&
					    app_waits(woke)) ||
					   muted_polls(woke)) {
					if (nap_ns < SWIW_ENG_NAP_MAX_NS)
						nap_ns *= 2;
				} else {
					nap_ns = SWIW_ENG_NAP_NS;
				}
			}
			/* A program polling in a loop holds the lock often:
			 * waiting for it would make each of its unlocks a
			 * futex wake-up. Timers can wait a few naps. */
			if (thread_trylock()) {
				busy_naps = 0;
				goto locked;
			}
			if (++busy_naps < SWIW_ENG_BUSY_NAPS)
				continue;
			busy_naps = 0;
		} else {
			uint64_t now = swiw_eng_now_ns();

			nap_ns = SWIW_ENG_NAP_NS;
			/* The program no longer polls: the thread hears the
			 * sockets from now on. */
			sock_unmute(true);
			/* Spin for what comes next, unless the program
			 * takes it itself, or may be spinning on memory
			 * (it took completions and arms no CQ) on the CPU
			 * we may share. */
			/* Nor for a program that looks at its channel
			 * itself: spinning on the CPU it may share would
			 * keep its next look from running (a pinned
			 * ib_send_lat -e fell into 75 us a message). */
			if (now < spin_until && !app_polled(now) &&
			    !within(&last_look_ns, now, SWIW_ENG_POLLED_NS) &&
			    (!app_took_last() || app_armed(now)))
				wait_ms = 0;
			/* Spinning, with one in-process stream: its socket is
			 * read directly, as a polling program's is (poll_once),
			 * in all but one round of SWIW_ENG_DIRECT_EVERY, where
			 * epoll_wait() serves the rest of the set. Data is
			 * then taken at once, not after the epoll_wait() that
			 * reports it: a Read's responder, which nothing but
			 * this thread serves (ib_read_lat). */
			if (!wait_ms && !owed &&
			    ++spin_rounds % SWIW_ENG_DIRECT_EVERY) {
				thread_lock();
				if (swiw_stream_poll_direct(&direct, &input)) {
					n = 0;
					woke = now;
					if (input)
						thread_takes++;
					goto locked;
				}
				swiw_eng_unlock();
			}
			n = thread_wait(evs, now,
					wait_ms < 0 ? UINT64_MAX :
						      now + (uint64_t)wait_ms *
								      1000000u,
					owed, seen_gen, &woke);
			/* Woken with the program that drives the engine: its
			 * own epoll_wait() reports the same events (level
			 * triggered), so leave them to it rather than queue
			 * on the lock. */
			if (n > 0 && app_polled(woke)) {
				bool locked;

				if (thread_trylock())
					goto locked;
				/* The helper woke us, and the program polls: only
				 * a round under the lock takes the helper's file
				 * out of the set (helper_mute), so wait for it
				 * once. Left to the holder instead, every event
				 * the helper posts wakes us again: ib_write_lat's
				 * post holds the lock as its SENT comes, two
				 * wake-ups a message for good (2-3x siw's latency
				 * in the VM lab, in one run in three). Once a
				 * millisecond at most: a CQ armed keeps it. */
				if (helper_woke(evs, n) && mute_still(woke) &&
				    woke - mute_tried > SWIW_ENG_POLLED_NS) {
					mute_tried = woke;
					goto wait;
				}
				/* One that waits by polling takes them at its
				 * next poll: let it run if it shares our CPU,
				 * by a nap, not a yield (thread_lock). */
				if (app_waits_long(woke) || app_streams(woke)) {
					struct timespec nap = {
						0, SWIW_ENG_YIELD_NAP_NS
					};

					nanosleep(&nap, NULL);
					continue;
				}
				/* One that may go on to spin on memory
				 * (ib_write_lat) needs us soon: a yield would
				 * leave us behind it until the tick (2 ms
				 * tails). It takes them as it lets go. */
				if (leave_events(&locked))
					continue;
				if (locked)
					goto locked;
			}
		}
wait:
		thread_lock();
locked:
		owed = false;
		__atomic_store_n(&eng_poll_wanted, false, __ATOMIC_RELAXED);
		eng_sq_hold = eng_cpu_off >= 0 && app_polled(swiw_eng_now_ns());
		/* A doorbell rang for work: spin for what follows it. */
		work = eng_events(evs, n, true) || n > 0 || direct;
		direct = false;
		swiw_conn_run();
		swiw_streams_reap();
		helper_mute();
		sock_mute(swiw_eng_now_ns());
		wait_ms = eng_timeout_ms();
		due = wait_ms < 0 ?
			      UINT64_MAX :
			      swiw_eng_now_ns() + (uint64_t)wait_ms * 1000000u;
		seen_gen = eng_poll_gen;
		eng_sq_hold = false;
		swiw_eng_unlock();
		if (work)
			spin_until = swiw_eng_now_ns() + SWIW_ENG_SPIN_NS;
		placed = work;
	}
	return NULL;
}

/*
 * A region left the STag table: the engine round under way, which may
 * still write to it from an earlier lookup, ends before this returns;
 * later rounds see it gone (swiw_mem_ref_live). Not from the engine
 * itself, which holds the lock (a stream's own internal region).
 */
void swiw_engine_mr_gone(void)
{
	const struct swiw_backend *be = swiw_backend();
	bool ended;

	if (!__atomic_load_n(&eng_started, __ATOMIC_ACQUIRE) ||
	    eng_held_by(pthread_self()))
		return;
	swiw_eng_lock();
	/* A Read Response held back by a peer that keeps its window shut
	 * would otherwise go out later from memory the program reuses. */
	ended = be && be->mr_gone && be->mr_gone();
	swiw_eng_unlock();
	/* The thread's next round drains the events and fails the stream. */
	if (ended)
		swiw_eng_doorbell();
}

/* Before the thread: every reading after this is of one clock. */
static void eng_clock_init(void)
{
	uint64_t cost = swiw_clock_init(swiw_config()->clock);

	if (!swiw_clock_counting())
		return;
	if (cost)
		swiw_info(
			"engine clock: the CPU's time-stamp counter; clock_gettime() takes %llu ns here",
			(unsigned long long)cost);
	else
		swiw_info(
			"engine clock: the CPU's time-stamp counter (clock = tsc)");
}

/* Starts the progress thread once; under the engine lock. */
int swiw_eng_start(void)
{
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.ptr = &doorbell_tag };
	int err;

	swiw_eng_assert_held();
	if (eng_started)
		return 0;
	eng_poll_mode = swiw_config()->progress == SWIW_PROGRESS_POLL;
	eng_clock_init();
	eng_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (eng_epfd < 0)
		return errno;
	eng_evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (eng_evfd < 0 || epoll_ctl(eng_epfd, EPOLL_CTL_ADD, eng_evfd, &ev))
		goto fail;
	err = pthread_create(&eng_thread, NULL, eng_main, NULL);
	if (err) {
		errno = err;
		goto fail;
	}
	pthread_detach(eng_thread);
	__atomic_store_n(&eng_started, true, __ATOMIC_RELEASE);
	return 0;
fail:
	err = errno;
	if (eng_evfd >= 0)
		close(eng_evfd);
	close(eng_epfd);
	eng_evfd = eng_epfd = -1;
	return err;
}

/*
 * Completion-channel event, when the CQ was armed for this completion:
 * the arm word is one-shot, so exactly one waiter is woken per arming.
 * The completion is published before the arm is read, by a
 * read-modify-write that orders it against the arming exchange (see
 * swiw_req_notify_cq).
 */
static void cq_notify(struct swiw_cq *cq, const struct swiw_cqe *e)
{
	struct ibv_comp_channel *ch = cq->vcq.cq.channel;
	uint64_t rec = (uintptr_t)&cq->vcq.cq;
	struct swiw_comp_channel *sch;
	uint32_t armed, look = SWIW_LOOK_ACTIVE;

	if (!ch)
		return;
	armed = __atomic_fetch_or(&cq->ctrl->notify, 0, __ATOMIC_ACQ_REL);
	if (armed == SWIW_NOTIFY_NOT)
		return;
	if (armed == SWIW_NOTIFY_SOLICITED &&
	    !(e->flags & SWIW_CQE_SOLICITED) && e->status == IBV_WC_SUCCESS)
		return; /* errors always wake, as verbs documents */
	if (!__atomic_compare_exchange_n(&cq->ctrl->notify, &armed,
					 SWIW_NOTIFY_NOT, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	sch = swiw_container_of(ch, struct swiw_comp_channel, ibv_ch);
	/* A thread looking at the channel takes it in memory. */
	if (__atomic_compare_exchange_n(&sch->look, &look, SWIW_LOOK_CLAIMED,
					false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED)) {
		sch->handed = &cq->vcq.cq;
		__atomic_store_n(&sch->look, SWIW_LOOK_HANDED,
				 __ATOMIC_RELEASE);
		return;
	}
	if (write(sch->wfd, &rec, sizeof(rec)) != sizeof(rec))
		swiw_warn("completion channel full: a CQ event was lost");
	else
		__atomic_fetch_add(&sch->posted, 1, __ATOMIC_RELEASE);
}

/*
 * Adds one completion. A full CQ is an error of the CQ (the application
 * sized it too small): the completion is lost, IBV_EVENT_CQ_ERR is
 * raised once, and -ENOSPC tells the caller to fail its QP.
 */
int swiw_engine_cq_push(struct swiw_cq *cq, const struct swiw_cqe *cqe)
{
	struct swiw_cqe *slot;

	/* The engine lock orders producers, and resize_cq against them. */
	swiw_eng_assert_held();
	slot = swiw_ring_prod_slot(&cq->eng);
	if (!slot) {
		if (!cq->overflow) {
			cq->overflow = true;
			swiw_post_async(to_swiw_ctx(cq->vcq.cq.context),
					IBV_EVENT_CQ_ERR,
					(uintptr_t)&cq->vcq.cq);
		}
		return -ENOSPC;
	}
	/* All but the flags byte, which poll_cq may be reading: only
	 * swiw_ring_publish() writes it, atomically. */
	_Static_assert(offsetof(struct swiw_cqe, flags) == 8,
		       "CQE flags follow the id");
	memcpy(slot, cqe, offsetof(struct swiw_cqe, flags));
	memcpy((uint8_t *)slot + offsetof(struct swiw_cqe, flags) + 1,
	       (const uint8_t *)cqe + offsetof(struct swiw_cqe, flags) + 1,
	       sizeof(*slot) - offsetof(struct swiw_cqe, flags) - 1);
	swiw_ring_publish(&cq->eng, slot, cqe->flags & ~SWIW_CQE_VALID);
	cq_notify(cq, cqe);
	return 0;
}

/* Every SQE and (own) RQE still queued completes with WR_FLUSH_ERR. */
void swiw_engine_flush_qp_locked(struct swiw_qp *qp)
{
	uint32_t qpn = qp->vqp.qp.qp_num;
	struct swiw_cqe e;
	void *slot;

	swiw_eng_assert_held();
	while ((slot = swiw_ring_cons_slot(&qp->sq_eng))) {
		const struct swiw_sqe *sqe = slot;

		memset(&e, 0, sizeof(e));
		e.id = sqe->id;
		e.opcode = sqe->opcode < SWIW_OP_MAX ? sqe->opcode :
						       SWIW_OP_SEND;
		e.status = IBV_WC_WR_FLUSH_ERR;
		e.qp_num = qpn;
		swiw_ring_release(&qp->sq_eng, slot);
		swiw_engine_cq_push(qp->scq, &e);
	}
	if (qp->srq)
		return; /* a shared queue outlives this QP's error */
	swiw_rq_resync(qp->rq);
	while ((slot = swiw_ring_cons_slot(&qp->rq->eng))) {
		const struct swiw_rqe *rqe = slot;

		memset(&e, 0, sizeof(e));
		e.id = rqe->id;
		e.opcode = SWIW_OP_RECV;
		e.status = IBV_WC_WR_FLUSH_ERR;
		e.qp_num = qpn;
		swiw_ring_release(&qp->rq->eng, slot);
		swiw_engine_cq_push(qp->rcq, &e);
	}
}

/*
 * The QP went to error (modify_qp, or a post to a QP in error): the
 * stream stops, and everything outstanding completes flushed, once.
 */
void swiw_engine_flush_qp(struct swiw_qp *qp)
{
	swiw_eng_lock();
	swiw_stream_qp_error(qp);
	swiw_engine_flush_qp_locked(qp);
	swiw_eng_unlock();
}

/*
 * modify_qp to RESET, with its own RQ run by a lower half: a fresh ring
 * for the next connection (swiw_rq_renew). If none can be had now, the
 * next INIT to RTR tries again, and fails if it cannot either.
 */
int swiw_engine_renew_rq(struct swiw_qp *qp)
{
	int err;

	if (qp->srq)
		return 0;
	swiw_eng_lock();
	err = swiw_rq_renew(qp->rq);
	swiw_eng_unlock();
	qp->rq_stale = err != 0;
	return err;
}

/* RESET and destroy: queued work requests are dropped, not completed. */
void swiw_engine_reset_qp(struct swiw_qp *qp)
{
	void *slot;

	swiw_eng_lock();
	swiw_stream_detach(qp);
	/* A stream that failed since modify_qp set RESET made it ERROR;
	 * detached, nothing changes it any more. */
	__atomic_store_n(&qp->state, IBV_QPS_RESET, __ATOMIC_RELEASE);

	while ((slot = swiw_ring_cons_slot(&qp->sq_eng)))
		swiw_ring_release(&qp->sq_eng, slot);
	if (!qp->srq)
		swiw_rq_resync(qp->rq);
	if (!qp->srq)
		while ((slot = swiw_ring_cons_slot(&qp->rq->eng)))
			swiw_ring_release(&qp->rq->eng, slot);
	swiw_eng_unlock();
}
