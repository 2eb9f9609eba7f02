// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Streams (swiw-abi.h, HELPER STREAMS): SWIW_IOC_ATTACH hands the helper a
 * connected TCP socket and its rings; the wire core's lower half
 * (swiw_lower.h) then runs here, over this file's pinned regions:
 *
 * - receive: the socket's data_ready feeds the queued skbs to
 *   swiw_lower_rx() in place (tcp_read_sock) where TCP calls it, in
 *   softirq as the kernel's siw does, so a Write is placed without a
 *   thread to wake; rx_work does it instead when the stream was in use
 *   then, and reports the end of the stream. What reception did not take
 *   (event ring full) stays in TCP until the next doorbell. Responses
 *   that receive queued are sent by tx_work (sending may sleep), or, when
 *   receive ran within a DOORBELL's own send (loopback, where the peer's
 *   softirq runs inside the sender's sendmsg), by that DOORBELL once its
 *   send is done (the kick): a Read's round trip wakes no worker;
 * - transmit: DOORBELL runs swiw_lower_tx() in the caller's context; when
 *   it waits for room, write_space queues tx_work to go on;
 * - DETACH and release() give the socket its callbacks back, cancel the
 *   work items and run swiw_lower_fini(), whatever state the stream is in;
 * - the process keeps its own descriptor of the socket: a disconnect
 *   (connect(AF_UNSPEC)) or a reset gives the callbacks back at once
 *   (error_report), before listen() could pass them to accepted children,
 *   and the stream ends there. sk_user_data is NOCOPY besides.
 *
 * Every swiw_lower call is made by the stream's one owner (busy, under
 * own_lock): data_ready takes it if it is free, else leaves rx_again for
 * the owner; process context takes the mutex, then waits out a softirq
 * owner. Lock order: file->lock, then stream->mutex, then the socket
 * lock; sk_callback_lock (read, in data_ready) before own_lock, the RQ's
 * rq_lock and the region table's lock; own_lock is held over no call.
 */
#include <linux/net.h>
#include <linux/file.h>
#include <linux/llist.h>
#include <linux/percpu.h>
#include <linux/sched/signal.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <net/inet_connection_sock.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <net/tcp_states.h>

#include "swiw_kmod.h"

#define SWIW_ACCESS_KNOWN                                     \
	(SWIW_ACCESS_REMOTE_WRITE | SWIW_ACCESS_REMOTE_READ | \
	 SWIW_ACCESS_REMOTE_ATOMIC)
#define SWIW_ATTACH_KNOWN                                                    \
	(SWIW_ATTACH_CRC | SWIW_ATTACH_MARKERS_TX | SWIW_ATTACH_MARKERS_RX | \
	 SWIW_ATTACH_RTR_EVENT)

/* Octets one rx_work run feeds before it yields the worker. */
#define SWIW_RX_BUDGET (1U << 20)
/* Rounds of transmits a DOORBELL runs for the streams its sends made
 * due (the kick). Each round's sends may make more due: the requester's
 * next Read Requests once responses free its ORD, and their responses
 * after them, so a chain would carry a whole bulk transfer inside one
 * ioctl. One round answers what the DOORBELL's own send asked; what that
 * answer makes due goes to tx_work. */
#define SWIW_KICK_ROUNDS 1
/* Response octets a DOORBELL sends for another stream at most: a large
 * Read is answered by tx_work, so that no post waits for its copy. */
#define SWIW_KICK_MAX (64U << 10)

struct swiw_kstream {
	refcount_t ref; /* the table's, and each command in progress */
	struct swiw_kfile *file;
	u32 id;
	u32 pd; /* regions of this PD only */
	struct mutex mutex; /* process-context owners, one at a time */
	spinlock_t own_lock; /* busy, rx_again */
	bool busy; /* owned: the lower half is in use */
	bool rx_again; /* data_ready found it owned: receive once more */
	bool dead; /* detached: the work items do nothing more */
	bool in_rx; /* the socket lock is held: send must not take it */
	bool closed; /* swiw_lower_rx_closed() was called */
	bool tx_wait; /* swiw_lower_tx() waits for room (write_space) */
	bool unhooked; /* the socket closed: its callbacks are given back */
	bool charged; /* to the file's user (swiw_user_charge) */
	struct socket *sock; /* its file is held (sockfd_lookup) */
	struct sock *sk;
	struct swiw_kqueue *rq, *tx, *rxev; /* held, users counted */
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	void (*saved_error_report)(struct sock *sk);
	struct work_struct rx_work;
	struct work_struct tx_work;
	/* In a DOORBELL's kick list (bit 0), and the DOORBELLs that hold it
	 * to send (kick_users), which teardown waits out. */
	unsigned long kicked;
	atomic_t kick_users;
	struct llist_node kick_node;
	struct kvec kvec[ARRAY_SIZE(((struct swiw_lower *)NULL)->biov)];
	struct swiw_lower lower; /* large: the stream is kvzalloc'd */
};

/* struct swiw_iov is laid out as struct kvec (swiw_fpdu.h). */
static_assert(sizeof(struct swiw_iov) == sizeof(struct kvec));

/* --- the lower half's environment ------------------------------------ */

static int swiw_env_mr_get(void *env, u32 stag, struct swiw_lower_mr *mr)
{
	struct swiw_kstream *s = env;

	return swiw_mr_get(s->file, s->pd, stag, mr);
}

static void swiw_env_mr_put(void *env, void *handle)
{
	swiw_mr_put(handle);
}

static int swiw_env_mr_invalidate(void *env, u32 stag)
{
	struct swiw_kstream *s = env;

	return swiw_mr_invalidate(s->file, s->pd, stag);
}

static void swiw_env_mr_write(void *env, void *handle, u64 addr,
			      const void *src, u32 len)
{
	swiw_mr_write(handle, addr, src, len);
}

static u32 swiw_env_mr_map(void *env, void *handle, u64 addr, u32 len,
			   struct swiw_iov *iov, u32 max)
{
	return swiw_mr_map(handle, addr, len, iov, max);
}

static int swiw_env_mr_atomic(void *env, void *handle, u64 addr,
			      const struct swiw_rdmap_atomic_req *a, u64 *orig)
{
	return swiw_mr_atomic(handle, addr, a, orig);
}

static bool swiw_env_mr_live(void *env, void *handle)
{
	return !READ_ONCE(((struct swiw_kmr *)handle)->dead);
}

/* Taken in softirq too (receive): BH off. */
static void swiw_env_rq_lock(void *env, struct swiw_lower_rq *rq)
	__acquires(rq_lock)
{
	spin_lock_bh(&container_of(rq, struct swiw_kqueue, rq)->rq_lock);
}

static void swiw_env_rq_unlock(void *env, struct swiw_lower_rq *rq)
	__releases(rq_lock)
{
	spin_unlock_bh(&container_of(rq, struct swiw_kqueue, rq)->rq_lock);
}

static long swiw_env_send(void *env, const struct swiw_iov *iov, u32 n, u32 len)
{
	struct swiw_kstream *s = env;
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	int ret;
	u32 i;

	/* Called from receive, under the socket lock: rx_work sends next. */
	if (s->in_rx)
		return 0;
	/* Closed and given back: the socket may be connected anew. */
	if (READ_ONCE(s->unhooked))
		return -EPIPE;
	if (WARN_ON_ONCE(n > ARRAY_SIZE(s->kvec)))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		s->kvec[i].iov_base = (void *)iov[i].base;
		s->kvec[i].iov_len = iov[i].len;
	}
	ret = kernel_sendmsg(s->sock, &msg, s->kvec, n, len);
	if (ret == -EAGAIN)
		return 0;
	return ret;
}

static void swiw_env_wake(void *env)
{
	struct swiw_kstream *s = env;

	wake_up_interruptible_poll(&s->file->wq, EPOLLIN | EPOLLRDNORM);
}

static const struct swiw_lower_ops swiw_env_ops = {
	.mr_get = swiw_env_mr_get,
	.mr_put = swiw_env_mr_put,
	.mr_invalidate = swiw_env_mr_invalidate,
	.mr_write = swiw_env_mr_write,
	.mr_map = swiw_env_mr_map,
	.mr_atomic = swiw_env_mr_atomic,
	.mr_live = swiw_env_mr_live,
	.rq_lock = swiw_env_rq_lock,
	.rq_unlock = swiw_env_rq_unlock,
	.send = swiw_env_send,
	.wake = swiw_env_wake,
};

/* --- ownership -------------------------------------------------------- */

/* Process context: owns the stream, once a softirq owner is done. */
static void swiw_stream_claim(struct swiw_kstream *s)
{
	mutex_lock(&s->mutex);
	spin_lock_bh(&s->own_lock);
	while (s->busy) {
		/* A receive in softirq on another CPU: it is bounded. */
		spin_unlock_bh(&s->own_lock);
		cpu_relax();
		spin_lock_bh(&s->own_lock);
	}
	s->busy = true;
	spin_unlock_bh(&s->own_lock);
}

/* Ends an ownership, of either kind: whether data_ready came meanwhile. */
static bool swiw_stream_unbusy(struct swiw_kstream *s)
{
	bool again;

	spin_lock_bh(&s->own_lock);
	s->busy = false;
	again = s->rx_again;
	s->rx_again = false;
	spin_unlock_bh(&s->own_lock);
	return again;
}

/* Gives the stream up; what data_ready left meanwhile, rx_work takes. */
static void swiw_stream_unclaim(struct swiw_kstream *s)
{
	if (swiw_stream_unbusy(s) && !s->dead)
		queue_work(swiw_wq, &s->rx_work);
	mutex_unlock(&s->mutex);
}

/* --- transmit -------------------------------------------------------- */

/* Under s->mutex: sends what the rings hold, as far as TCP takes it. */
static void swiw_stream_tx(struct swiw_kstream *s)
{
	/* Set first: a write_space between a short send and our return
	 * must queue tx_work, not find the flag still clear. */
	WRITE_ONCE(s->tx_wait, true);
	if (swiw_lower_tx(&s->lower) != 1)
		WRITE_ONCE(s->tx_wait, false);
}

static void swiw_tx_work(struct work_struct *w)
{
	struct swiw_kstream *s = container_of(w, struct swiw_kstream, tx_work);

	swiw_stream_claim(s);
	if (!s->dead)
		swiw_stream_tx(s);
	swiw_stream_unclaim(s);
}

/*
 * The kick. A DOORBELL's sendmsg on loopback runs the receiving socket's
 * softirq inline, in the sending task: a Read Request's data_ready there
 * makes the Read Response due, which softirq cannot send. Rather than
 * wake tx_work on another CPU (an idle one's wake-up is most of a Read's
 * round trip), data_ready hands the stream to that DOORBELL, which sends
 * the response when its own send is done, and the response's softirq
 * places it at the requester before the requester's ioctl even returns.
 * Small responses only (SWIW_KICK_MAX), one round (SWIW_KICK_ROUNDS).
 * swiw_kick_task on a CPU names the task in a DOORBELL's window there:
 * a receive that finds itself running in that task (current) is inside
 * the window, so the window's list, on that task's stack, is alive.
 */
static DEFINE_PER_CPU(struct task_struct *, swiw_kick_task);
static DEFINE_PER_CPU(struct llist_head *, swiw_kick_list);

/* Opens the caller's window on this CPU; returns the CPU. */
static int swiw_kick_open(struct llist_head *k)
{
	int cpu = get_cpu();

	init_llist_head(k);
	/* The list first: a softirq between the two stores must not pair
	 * this task with another window's list. */
	per_cpu(swiw_kick_list, cpu) = k;
	barrier();
	per_cpu(swiw_kick_task, cpu) = current;
	put_cpu();
	return cpu;
}

/*
 * Owned (receive, in data_ready): true if @s's due transmit was handed to
 * the DOORBELL this runs within. Another task's slot (this one migrated,
 * or another opened a window here since) or none: tx_work sends it.
 */
static bool swiw_kick_defer(struct swiw_kstream *s)
{
	if (this_cpu_read(swiw_kick_task) != current || s->dead)
		return false;
	/* Set: in a list still, whose DOORBELL sends it all. */
	if (!test_and_set_bit(0, &s->kicked)) {
		atomic_inc(&s->kick_users);
		llist_add(&s->kick_node, this_cpu_read(swiw_kick_list));
	}
	return true;
}

/* Out of the list before it is sent: a receive meanwhile hands it anew. */
static void swiw_kick_take(struct swiw_kstream *s)
{
	clear_bit(0, &s->kicked);
	smp_mb__after_atomic();
}

static void swiw_kick_put(struct swiw_kstream *s)
{
	/* @s may be gone after the decrement: wake_up_var only hashes. */
	if (atomic_dec_and_test(&s->kick_users))
		wake_up_var(&s->kick_users);
}

/*
 * Sends what the window's list holds, round after round, then closes the
 * window (@cpu: where it was opened) and leaves what is still listed to
 * tx_work. A stream is taken off (its bit cleared) only as its turn
 * comes: one later in the chain stays in the list meanwhile, so a receive
 * cannot relink it under the walk. Every queue_work here comes before
 * the stream's kick_users drops, so teardown's cancel, which waits for
 * kick_users first, catches it.
 */
static void swiw_kick_close(struct llist_head *k, int cpu)
{
	struct swiw_kstream *s, *t;
	struct llist_node *n;
	int round;

	for (round = 0; round < SWIW_KICK_ROUNDS; round++) {
		n = llist_reverse_order(llist_del_all(k));
		if (!n)
			break;
		llist_for_each_entry_safe(s, t, n, kick_node)
		{
			swiw_kick_take(s);
			swiw_stream_claim(s);
			if (!s->dead)
				swiw_stream_tx(s);
			swiw_stream_unclaim(s);
			swiw_kick_put(s);
		}
	}
	/* Only this task adds, in its window: nothing comes after this. */
	cmpxchg(per_cpu_ptr(&swiw_kick_task, cpu), current, NULL);
	n = llist_del_all(k);
	llist_for_each_entry_safe(s, t, n, kick_node)
	{
		swiw_kick_take(s);
		if (!READ_ONCE(s->dead))
			queue_work(swiw_wq, &s->tx_work);
		swiw_kick_put(s);
	}
}

/* --- receive --------------------------------------------------------- */

/* Feeds @len octets at @p; false when the lower half took fewer. */
static bool swiw_rx_feed(struct swiw_kstream *s, const void *p, size_t len,
			 size_t *done)
{
	size_t used = 0;
	int ret;

	ret = swiw_lower_rx(&s->lower, p, len, &used);
	if (used > len)
		used = len;
	*done += used;
	return !ret && used == len;
}

/*
 * Walks @len octets of @skb's data from @off in place: the linear part,
 * the page fragments (through the direct map: no highmem), and the
 * frag_list, recursively. Returns false when the lower half stopped.
 */
static bool swiw_rx_skb(struct swiw_kstream *s, const struct sk_buff *skb,
			unsigned int off, size_t len, size_t *done)
{
	unsigned int start = 0, end, i;
	const struct sk_buff *frag_iter;
	size_t n;

	end = skb_headlen(skb);
	if (off < end) {
		n = min_t(size_t, end - off, len);
		if (!swiw_rx_feed(s, skb->data + off, n, done))
			return false;
		off += n;
		len -= n;
	}
	start = end;
	for (i = 0; len && i < skb_shinfo(skb)->nr_frags; i++) {
		const skb_frag_t *frag = &skb_shinfo(skb)->frags[i];

		end = start + skb_frag_size(frag);
		if (off < end) {
			const u8 *p = page_address(skb_frag_page(frag));

			n = min_t(size_t, end - off, len);
			p += skb_frag_off(frag) + (off - start);
			if (!swiw_rx_feed(s, p, n, done))
				return false;
			off += n;
			len -= n;
		}
		start = end;
	}
	skb_walk_frags(skb, frag_iter)
	{
		if (!len)
			break;
		end = start + frag_iter->len;
		if (off < end) {
			n = min_t(size_t, end - off, len);
			if (!swiw_rx_skb(s, frag_iter, off - start, n, done))
				return false;
			off += n;
			len -= n;
		}
		start = end;
	}
	return true;
}

/* tcp_read_sock's actor: returns the octets consumed; TCP keeps the rest. */
static int swiw_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			 unsigned int offset, size_t len)
{
	struct swiw_kstream *s = desc->arg.data;
	size_t done = 0;

	len = min_t(size_t, len, desc->count);
	if (!len)
		return 0; /* called again after a stop: the rest stays */
	if (!swiw_rx_skb(s, skb, offset, len, &done))
		desc->count = 0; /* stalled or ended: read no further */
	else
		desc->count -= done;
	return (int)done;
}

/*
 * Owned, reception open, the socket locked: feeds what TCP queued, one
 * budget's worth (*@fed octets). True when reception is still open and
 * TCP holds something more for it: octets past the budget or not handed
 * over, an error, or the FIN.
 */
static bool swiw_stream_feed(struct swiw_kstream *s, int *fed)
{
	read_descriptor_t desc = { .arg.data = s, .count = SWIW_RX_BUDGET };
	struct sock *sk = s->sk;

	s->in_rx = true;
	*fed = tcp_read_sock(sk, &desc, swiw_rx_actor);
	s->in_rx = false;
	return !swiw_lower_rx_done(&s->lower) &&
	       !swiw_lower_stalled(&s->lower) &&
	       (!skb_queue_empty(&sk->sk_receive_queue) ||
		READ_ONCE(sk->sk_err) ||
		(READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN));
}

/*
 * Owned: feeds what TCP queued, reports the end of the stream
 * once it has all been fed, and sends what that made due (Read and Atomic
 * Responses). Returns true when the budget ran out with data left.
 */
static bool swiw_stream_rx(struct swiw_kstream *s)
{
	struct sock *sk = s->sk;
	bool more = false, end = false;
	int err = 0, fed;

	if (swiw_lower_rx_done(&s->lower) || swiw_lower_stalled(&s->lower))
		goto tx;
	lock_sock(sk);
	/* Given back, and the process uses the socket anew: not ours. */
	if (READ_ONCE(s->unhooked) &&
	    (sk->sk_state != TCP_CLOSE || inet_csk(sk)->icsk_ulp_ops)) {
		err = ECONNRESET;
		end = true;
	} else if (swiw_stream_feed(s, &fed)) {
		if (!skb_queue_empty(&sk->sk_receive_queue)) {
			/*
			 * The budget ran out; or TCP would not hand over
			 * a byte: urgent data, which no iWARP peer sends.
			 * Waiting would spin, so the stream ends.
			 */
			more = fed > 0;
			if (!more) {
				err = EPROTO;
				end = true;
			}
		} else if (READ_ONCE(sk->sk_err)) {
			err = READ_ONCE(sk->sk_err);
			end = true;
		} else if (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN) {
			end = true; /* FIN, every octet before it fed */
		}
	} else if (READ_ONCE(s->unhooked) && !swiw_lower_rx_done(&s->lower) &&
		   !swiw_lower_stalled(&s->lower)) {
		/* Disconnected: its error may have been read by the process. */
		err = READ_ONCE(sk->sk_err) ?: ECONNRESET;
		end = true;
	}
	release_sock(sk);
	if (end && !s->closed) {
		s->closed = true;
		swiw_lower_rx_closed(&s->lower, err);
	}
tx:
	swiw_stream_tx(s);
	return more;
}

static void swiw_rx_work(struct work_struct *w)
{
	struct swiw_kstream *s = container_of(w, struct swiw_kstream, rx_work);
	bool more = false;

	swiw_stream_claim(s);
	if (!s->dead)
		more = swiw_stream_rx(s);
	swiw_stream_unclaim(s);
	/* A detach cancelling this work makes the requeue a no-op. */
	if (more)
		queue_work(swiw_wq, &s->rx_work);
}

/* --- socket callbacks (softirq or process context) -------------------- */

/* Under sk_callback_lock (write): the socket's own callbacks again. */
static void swiw_stream_unhook(struct swiw_kstream *s)
{
	struct sock *sk = s->sk;

	sk->sk_data_ready = s->saved_data_ready;
	sk->sk_write_space = s->saved_write_space;
	sk->sk_state_change = s->saved_state_change;
	sk->sk_error_report = s->saved_error_report;
	rcu_assign_sk_user_data(sk, NULL);
}

/*
 * data_ready, owning the stream, the socket locked by TCP (softirq, or
 * the owner's release_sock): feeds what TCP queued where it lies. Ends
 * of the stream, a spent budget and urgent data go to rx_work, responses
 * to tx_work: neither can be done here.
 */
static void swiw_stream_rx_here(struct swiw_kstream *s)
{
	bool rx = false, tx;
	int fed;

	if (!swiw_lower_rx_done(&s->lower) && !swiw_lower_stalled(&s->lower))
		rx = swiw_stream_feed(s, &fed);
	tx = swiw_lower_tx_due(&s->lower) &&
	     !(swiw_lower_resp_octets(&s->lower, SWIW_KICK_MAX) <=
		       SWIW_KICK_MAX &&
	       swiw_kick_defer(s));
	if (swiw_stream_unbusy(s) || rx)
		queue_work(swiw_wq, &s->rx_work);
	if (tx)
		queue_work(swiw_wq, &s->tx_work);
}

static void swiw_sk_data_ready(struct sock *sk)
{
	struct swiw_kstream *s;
	bool mine = false;

	read_lock_bh(&sk->sk_callback_lock);
	s = __locked_read_sk_user_data_with_flags(sk, SK_USER_DATA_NOCOPY);
	if (s) {
		spin_lock(&s->own_lock);
		if (s->busy)
			s->rx_again = true;
		else
			mine = s->busy = true;
		spin_unlock(&s->own_lock);
		if (mine)
			swiw_stream_rx_here(s);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void swiw_sk_write_space(struct sock *sk)
{
	struct swiw_kstream *s;

	read_lock_bh(&sk->sk_callback_lock);
	s = __locked_read_sk_user_data_with_flags(sk, SK_USER_DATA_NOCOPY);
	if (s && sk_stream_is_writeable(sk)) {
		if (sk->sk_socket)
			clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		if (READ_ONCE(s->tx_wait))
			queue_work(swiw_wq, &s->tx_work);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/* FIN, RST, errors: rx_work reports them after the octets before them. */
static void swiw_sk_state_change(struct sock *sk)
{
	struct swiw_kstream *s;

	read_lock_bh(&sk->sk_callback_lock);
	s = __locked_read_sk_user_data_with_flags(sk, SK_USER_DATA_NOCOPY);
	if (s) {
		queue_work(swiw_wq, &s->rx_work);
		if (READ_ONCE(s->tx_wait))
			queue_work(swiw_wq, &s->tx_work);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * A reset, or the process's connect(AF_UNSPEC) (tcp_disconnect ends with
 * this call, the socket owned): once the socket is closed our callbacks
 * go back, so that a listen() on it can pass none of ours (nor the
 * stream) to the sockets it accepts, even after the module is gone.
 * rx_work then ends the stream after what TCP still holds.
 */
static void swiw_sk_error_report(struct sock *sk)
{
	void (*report)(struct sock *);
	struct swiw_kstream *s;

	write_lock_bh(&sk->sk_callback_lock);
	report = sk->sk_error_report;
	s = __locked_read_sk_user_data_with_flags(sk, SK_USER_DATA_NOCOPY);
	if (s) {
		report = s->saved_error_report;
		if (sk->sk_state == TCP_CLOSE) {
			WRITE_ONCE(s->unhooked, true);
			swiw_stream_unhook(s);
		}
		queue_work(swiw_wq, &s->rx_work);
		if (READ_ONCE(s->tx_wait))
			queue_work(swiw_wq, &s->tx_work);
	}
	write_unlock_bh(&sk->sk_callback_lock);
	if (report != swiw_sk_error_report)
		report(sk);
}

/* --- attach, detach -------------------------------------------------- */

static void swiw_stream_put(struct swiw_kstream *s)
{
	if (refcount_dec_and_test(&s->ref)) {
		mutex_destroy(&s->mutex);
		if (s->charged)
			swiw_user_uncharge(s->file->user, sizeof(*s));
		kvfree(s);
	}
}

/* The socket of @fd, held, if it is a connected TCP socket; else NULL. */
static struct socket *swiw_get_socket(int fd, int *err)
{
	struct socket *sock;
	struct sock *sk;

	sock = sockfd_lookup(fd, err); /* EBADF, ENOTSOCK */
	if (!sock)
		return NULL;
	sk = sock->sk;
	if (!sk || (sk->sk_family != AF_INET && sk->sk_family != AF_INET6) ||
	    sk->sk_type != SOCK_STREAM || sk->sk_protocol != IPPROTO_TCP)
		*err = -EPROTONOSUPPORT;
	else if (READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		*err = -ENOTCONN;
	else
		return sock;
	sockfd_put(sock);
	return NULL;
}

/* Takes the rings, under file->lock: a transmit or event ring is one
 * stream's; an RQ (an SRQ's) may be shared. */
static int swiw_stream_take_rings(struct swiw_kstream *s,
				  const struct swiw_ioc_attach *req)
{
	struct swiw_kfile *f = s->file;
	int ret = 0;

	mutex_lock(&f->lock);
	s->rq = swiw_queue_find(f, req->rq_id, SWIW_QUEUE_RQ);
	s->tx = swiw_queue_find(f, req->tx_id, SWIW_QUEUE_TX);
	s->rxev = swiw_queue_find(f, req->rxev_id, SWIW_QUEUE_RXEV);
	if (!s->rq || !s->tx || !s->rxev) {
		ret = -EINVAL;
	} else if (s->tx->users || s->rxev->users) {
		ret = -EBUSY;
	} else {
		s->rq->users++;
		s->tx->users++;
		s->rxev->users++;
		swiw_queue_get(s->rq);
		swiw_queue_get(s->tx);
		swiw_queue_get(s->rxev);
	}
	mutex_unlock(&f->lock);
	if (ret)
		s->rq = s->tx = s->rxev = NULL;
	return ret;
}

static void swiw_stream_drop_rings(struct swiw_kstream *s)
{
	struct swiw_kfile *f = s->file;

	if (!s->rq)
		return;
	mutex_lock(&f->lock);
	s->rq->users--;
	s->tx->users--;
	s->rxev->users--;
	mutex_unlock(&f->lock);
	swiw_queue_put(s->rq);
	swiw_queue_put(s->tx);
	swiw_queue_put(s->rxev);
	s->rq = s->tx = s->rxev = NULL;
}

/*
 * Installs our callbacks: -EBUSY if the socket already has a user,
 * -ENOTCONN if it is closed or listening. Under the socket lock, as
 * disconnect and listen are: a socket hooked here can only be made to
 * listen after a disconnect, which unhooks it (error_report).
 */
static int swiw_stream_hook(struct swiw_kstream *s)
{
	struct sock *sk = s->sk;
	int ret = 0;

	lock_sock(sk);
	write_lock_bh(&sk->sk_callback_lock);
	if (sk->sk_user_data) {
		ret = -EBUSY;
	} else if (!((1 << sk->sk_state) &
		     (TCPF_ESTABLISHED | TCPF_CLOSE_WAIT))) {
		ret = -ENOTCONN;
	} else {
		s->saved_data_ready = sk->sk_data_ready;
		s->saved_write_space = sk->sk_write_space;
		s->saved_state_change = sk->sk_state_change;
		s->saved_error_report = sk->sk_error_report;
		__rcu_assign_sk_user_data_with_flags(sk, s,
						     SK_USER_DATA_NOCOPY);
		sk->sk_data_ready = swiw_sk_data_ready;
		sk->sk_write_space = swiw_sk_write_space;
		sk->sk_state_change = swiw_sk_state_change;
		sk->sk_error_report = swiw_sk_error_report;
	}
	write_unlock_bh(&sk->sk_callback_lock);
	release_sock(sk);
	return ret;
}

/*
 * Stops a stream that is no longer in the table: the callbacks go back
 * if they are still ours (none of ours runs once the write lock is
 * dropped), the work items are cancelled (dead makes a run that already
 * started a no-op), the lower half drops its regions and reports an RQE
 * it held, and the socket and rings are let go. Safe in any state, from
 * DETACH or release().
 */
static void swiw_stream_teardown(struct swiw_kstream *s)
{
	struct sock *sk = s->sk;

	/* Not if a close gave them back already: the socket may be
	 * another user's now. */
	write_lock_bh(&sk->sk_callback_lock);
	if (__locked_read_sk_user_data_with_flags(sk, SK_USER_DATA_NOCOPY) == s)
		swiw_stream_unhook(s);
	write_unlock_bh(&sk->sk_callback_lock);

	swiw_stream_claim(s);
	s->dead = true;
	swiw_stream_unclaim(s);
	/* A DOORBELL that was handed it (the kick) is done with it, and has
	 * queued what it left, before the cancels. */
	wait_var_event(&s->kick_users, !atomic_read(&s->kick_users));
	cancel_work_sync(&s->rx_work);
	cancel_work_sync(&s->tx_work);

	swiw_stream_claim(s);
	swiw_lower_fini(&s->lower);
	swiw_stream_unclaim(s);

	sockfd_put(s->sock);
	swiw_stream_drop_rings(s);
}

int swiw_stream_attach(struct swiw_kfile *f, void __user *arg)
{
	struct swiw_ioc_attach req;
	struct swiw_lower_cfg cfg = {};
	struct swiw_kstream *s;
	struct socket *sock;
	u32 id, mss;
	int ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~SWIW_ATTACH_KNOWN || req.access & ~SWIW_ACCESS_KNOWN ||
	    req.stream_id || req.ird > SWIW_MAX_IRD || req.ord > SWIW_MAX_ORD)
		return -EINVAL;
	/* The provider keeps its SQ and CQ (swiw-abi.h). */
	if (req.sq_id || req.cq_id)
		return -EINVAL;

	/* Large, and as many as the caller has sockets: charge its memcg. */
	ret = swiw_user_charge(f->user, sizeof(*s));
	if (ret)
		return ret;
	s = kvzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s) {
		swiw_user_uncharge(f->user, sizeof(*s));
		return -ENOMEM;
	}
	s->charged = true;
	refcount_set(&s->ref, 1);
	s->file = f;
	s->pd = req.pd;
	mutex_init(&s->mutex);
	spin_lock_init(&s->own_lock);
	INIT_WORK(&s->rx_work, swiw_rx_work);
	INIT_WORK(&s->tx_work, swiw_tx_work);
	ret = swiw_stream_take_rings(s, &req);
	if (ret)
		goto err_free;
	sock = swiw_get_socket(req.sock_fd, &ret);
	if (!sock)
		goto err_rings;
	s->sock = sock;
	s->sk = sock->sk;

	/* A socket with an upper layer protocol (kTLS) is not plain TCP. */
	lock_sock(s->sk);
	mss = READ_ONCE(tcp_sk(s->sk)->mss_cache);
	if (inet_csk(s->sk)->icsk_ulp_ops)
		ret = -EBUSY;
	release_sock(s->sk);
	if (ret)
		goto err_sock;

	cfg.crc = req.flags & SWIW_ATTACH_CRC;
	cfg.markers_tx = req.flags & SWIW_ATTACH_MARKERS_TX;
	cfg.markers_rx = req.flags & SWIW_ATTACH_MARKERS_RX;
	cfg.rtr_event = req.flags & SWIW_ATTACH_RTR_EVENT;
	cfg.ird = req.ird;
	cfg.qp_access = req.access;
	cfg.mulpdu = swiw_mpa_mulpdu(mss, cfg.markers_tx);
	/* Marker origins: the sequence numbers now, before any FPDU. */
	cfg.tx_pos = 0;
	cfg.rx_pos = 0;
	cfg.tx = (struct swiw_ring){ .base = s->tx->mem,
				     .num = s->tx->num,
				     .stride = s->tx->stride };
	cfg.rxev = (struct swiw_ring){ .base = s->rxev->mem,
				       .num = s->rxev->num,
				       .stride = s->rxev->stride };
	cfg.rq = &s->rq->rq;
	ret = swiw_lower_init(&s->lower, &cfg, &swiw_env_ops, s);
	if (ret)
		goto err_sock;

	/* An id, reserved: nobody finds the stream before it is whole. */
	/* Cyclic: a stale id of the caller's names no newer stream soon. */
	mutex_lock(&f->lock);
	ret = xa_alloc_cyclic(&f->streams, &id, NULL,
			      XA_LIMIT(1, SWIW_MAX_STREAMS), &f->next_stream,
			      GFP_KERNEL);
	mutex_unlock(&f->lock);
	if (ret < 0) {
		ret = ret == -EBUSY ? -ENOMEM : ret;
		goto err_fini;
	}
	s->id = id;
	req.stream_id = id;
	if (copy_to_user(arg, &req, sizeof(req))) {
		ret = -EFAULT;
		goto err_id;
	}
	ret = swiw_stream_hook(s);
	if (ret)
		goto err_id;
	mutex_lock(&f->lock);
	xa_store(&f->streams, id, s, GFP_KERNEL); /* reserved: cannot fail */
	mutex_unlock(&f->lock);
	/* Octets that arrived before the callbacks were ours. */
	queue_work(swiw_wq, &s->rx_work);
	return 0;

err_id:
	xa_erase(&f->streams, id);
err_fini:
	swiw_lower_fini(&s->lower);
err_sock:
	sockfd_put(sock);
err_rings:
	swiw_stream_drop_rings(s);
err_free:
	swiw_stream_put(s);
	return ret;
}

/* The stream @id names, held; NULL if there is none. */
static struct swiw_kstream *swiw_stream_get(struct swiw_kfile *f, u32 id)
{
	struct swiw_kstream *s;

	xa_lock(&f->streams);
	s = xa_load(&f->streams, id);
	if (s)
		refcount_inc(&s->ref);
	xa_unlock(&f->streams);
	return s;
}

/*
 * Every placement under way on @f's streams has ended (each is owned and
 * given up once): a region marked dead before this is written no more,
 * and a frame from it still waiting for TCP ends its stream instead of
 * going out (swiw_lower_tx_revoke). Regions belong to one file, so no
 * other file's stream can reach it.
 */
void swiw_streams_barrier(struct swiw_kfile *f)
{
	struct swiw_kstream *s;
	unsigned long id;

	xa_for_each(&f->streams, id, s)
	{
		s = swiw_stream_get(f, (u32)id);
		if (!s)
			continue;
		swiw_stream_claim(s);
		/* Nor is a frame that waits for TCP room sent from it. */
		if (!s->dead && swiw_lower_tx_revoke(&s->lower))
			WRITE_ONCE(s->tx_wait, false);
		swiw_stream_unclaim(s);
		swiw_stream_put(s);
	}
}

static int swiw_stream_doorbell(struct swiw_kstream *s)
{
	bool stalled;
	int ret = 0;

	swiw_stream_claim(s);
	if (s->dead) {
		ret = -EINVAL; /* detached meanwhile */
	} else {
		stalled = swiw_lower_stalled(&s->lower);
		swiw_lower_doorbell(&s->lower);
		swiw_stream_tx(s);
		/* Receive stopped on a full event ring: TCP kept the rest. */
		if (stalled)
			queue_work(swiw_wq, &s->rx_work);
	}
	swiw_stream_unclaim(s);
	return ret;
}

int swiw_stream_cmd(struct swiw_kfile *f, unsigned int cmd, void __user *arg)
{
	struct swiw_ioc_stream req;
	struct llist_head kick;
	struct swiw_kstream *s;
	int ret, cpu;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.rsvd)
		return -EINVAL;
	if (cmd == SWIW_IOC_DETACH) {
		/* A reserved id (an ATTACH under way) loads as NULL and must
		 * stay reserved: erasing it would let its number be given
		 * out twice. */
		mutex_lock(&f->lock);
		s = xa_load(&f->streams, req.stream_id);
		if (s)
			xa_erase(&f->streams, req.stream_id);
		mutex_unlock(&f->lock);
		if (!s)
			return -EINVAL;
		swiw_stream_teardown(s);
		swiw_stream_put(s);
		return 0;
	}
	s = swiw_stream_get(f, req.stream_id);
	if (!s)
		return -EINVAL;
	cpu = swiw_kick_open(&kick);
	ret = swiw_stream_doorbell(s);
	swiw_stream_put(s);
	swiw_kick_close(&kick, cpu);
	return ret;
}

/* SET_ACCESS: the QP's remote rights, for every segment from now on. */
int swiw_stream_set_access(struct swiw_kfile *f, void __user *arg)
{
	struct swiw_ioc_access req;
	struct swiw_kstream *s;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.access & ~SWIW_ACCESS_KNOWN)
		return -EINVAL;
	s = swiw_stream_get(f, req.stream_id);
	if (!s)
		return -EINVAL;
	swiw_stream_claim(s);
	if (!s->dead)
		swiw_lower_set_access(&s->lower, req.access);
	swiw_stream_unclaim(s);
	swiw_stream_put(s);
	return 0;
}

/* poll(): an event of any stream of the file not yet consumed. */
bool swiw_stream_events_pending(struct swiw_kfile *f)
{
	struct swiw_kstream *s;
	unsigned long id;
	bool pending = false;

	mutex_lock(&f->lock);
	xa_for_each(&f->streams, id, s)
	{
		swiw_stream_claim(s);
		pending = !s->dead && swiw_lower_events_pending(&s->lower);
		swiw_stream_unclaim(s);
		if (pending)
			break;
	}
	mutex_unlock(&f->lock);
	return pending;
}

/* release(): no command can run any more; every stream goes. */
void swiw_stream_release_all(struct swiw_kfile *f)
{
	struct swiw_kstream *s;
	unsigned long id;

	xa_for_each(&f->streams, id, s)
	{
		xa_erase(&f->streams, id);
		swiw_stream_teardown(s);
		swiw_stream_put(s);
	}
	xa_destroy(&f->streams);
}
