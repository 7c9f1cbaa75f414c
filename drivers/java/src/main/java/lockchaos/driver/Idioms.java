package lockchaos.driver;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import org.redisson.api.RLock;

/**
 * The API modes (docs/driver-protocol.md, the lock option {@code api}): the idioms Redisson's users
 * write, each with {@code unlock()} in a {@code finally} around the application's critical
 * section. The critical section is {@code body}: the driver answers {@code acquired} in it, then
 * waits there for lockchaos's release, which returns from it (the scope is left normally) or
 * throws the release's {@code throw} (the throw extension). What leaves the idiom is the release's
 * outcome: nothing (released), the application's exception (released, raised), or what the
 * {@code finally}'s {@code unlock()} threw, which in Java replaces the application's exception.
 *
 * <p>Each lease's whole scope runs on one thread, as on an application's request thread: Redisson's
 * RLock belongs to the thread that locked it.
 */
final class Idioms {
    private Idioms() {}

    /** The application's code inside the scope. */
    interface Body {
        void run() throws Exception;
    }

    /**
     * One acquire's parameters: its wait (wait_ms) and lease (ttl_ms), whether the lock has no lease
     * (the watchdog renews it), and retry=driver (a multi-lock's try-lock as tryLock(0, lease) again
     * every retryDelayMs ± half until waitMs).
     */
    record Call(long waitMs, long leaseMs, boolean watchdog, boolean driverRetry, long retryDelayMs) {}

    /** The modes of an RLock with the watchdog (no lease): redisson. */
    static final List<String> WATCHDOG = List.of("lock", "try-lock", "lock-interruptibly");
    /** The modes of an RLock with a lease: redisson-lease. */
    static final List<String> LEASE = List.of("lock-lease", "try-lock-lease");
    /** The modes of a RedissonRedLock or RedissonMultiLock, with a lease or the watchdog. */
    static final List<String> MULTI = List.of("lock", "try-lock");

    /**
     * The modes with no bound of their own ({@code lock()} waits until it wins): the driver bounds
     * them by wait_ms (docs/driver-protocol.md, a library with no bounded acquire).
     */
    static boolean unbounded(String api) {
        return api.equals("lock") || api.equals("lock-lease") || api.equals("lock-interruptibly");
    }

    /**
     * Runs body inside api's idiom on this thread. False: not acquired (body did not run). An
     * exception: what came out of the idiom (from the acquire, if body did not run; else from body
     * or the finally's unlock).
     */
    static boolean scope(String api, RLock lock, Call c, Body body) throws Exception {
        if (c.waitMs() <= 0) {
            // wait_ms 0 is the protocol's single attempt (TryAcquire): in every mode, the call an
            // application that must not wait makes.
            if (!(c.watchdog() ? lock.tryLock(0, MILLISECONDS) : lock.tryLock(0, c.leaseMs(), MILLISECONDS))) {
                return false;
            }
            try {
                body.run();
            } finally {
                lock.unlock();
            }
            return true;
        }
        switch (api) {
            case "lock":
                // RLock: lock.lock() (the watchdog). RedissonRedLock: lock(lease, unit), its lease.
                if (c.watchdog()) {
                    lock.lock();
                } else {
                    lock.lock(c.leaseMs(), MILLISECONDS);
                }
                try {
                    body.run();
                } finally {
                    lock.unlock();
                }
                return true;
            case "lock-lease":
                lock.lock(c.leaseMs(), MILLISECONDS);
                try {
                    body.run();
                } finally {
                    lock.unlock();
                }
                return true;
            case "lock-interruptibly":
                lock.lockInterruptibly();
                try {
                    body.run();
                } finally {
                    lock.unlock();
                }
                return true;
            case "try-lock":
            case "try-lock-lease":
                if (tryLock(lock, c)) {
                    try {
                        body.run();
                    } finally {
                        lock.unlock();
                    }
                    return true;
                }
                return false;
            default:
                throw new IllegalArgumentException("unknown api " + api);
        }
    }

    /** if (lock.tryLock(wait, unit)) / tryLock(wait, lease, unit); retry=driver's loop on a multi-lock. */
    static boolean tryLock(RLock lock, Call c) throws InterruptedException {
        if (!c.driverRetry()) {
            return c.watchdog() ? lock.tryLock(c.waitMs(), MILLISECONDS) : lock.tryLock(c.waitMs(), c.leaseMs(), MILLISECONDS);
        }
        // RedissonMultiLock.tryLock(wait, lease) sets each master's key with a lease of 2 x wait until
        // every master has answered (then PEXPIREs them to the lease) and waits up to wait/n on each
        // held master in turn; tryLock(0, lease) is one round with the lease itself, retried here
        // until wait_ms.
        long end = System.nanoTime() + c.waitMs() * 1_000_000L;
        long d0 = c.retryDelayMs();
        for (;;) {
            boolean ok = c.watchdog() ? lock.tryLock(0, MILLISECONDS) : lock.tryLock(0, c.leaseMs(), MILLISECONDS);
            long left = end - System.nanoTime();
            if (ok || left <= 0) {
                return ok;
            }
            long d = d0 + ThreadLocalRandom.current().nextLong(-d0 / 2, d0 / 2 + 1);
            Thread.sleep(Math.max(0, Math.min(d, left / 1_000_000L)));
            if (System.nanoTime() >= end) {
                return false;
            }
        }
    }

    /**
     * Whether a thread still in an unbounded idiom's acquire when its wait_ms passed may have a
     * command in flight that takes the key (then the answer is indeterminate, never not_acquired).
     * It may not when its innermost Redisson frame is RedissonLock's own lock/tryLock waiting for a
     * release (the pub/sub latch, or the subscription before it): no lock script is on the wire.
     * Anything else (the lock script, a RedissonMultiLock's own step, a win not yet answered) may.
     */
    static boolean mayTakeKey(Thread t) {
        String[] lockMethods = {"lock", "lockInterruptibly", "tryLock"};
        StackTraceElement[] st = t.getStackTrace();
        int i = 0;
        while (i < st.length && !st[i].getClassName().startsWith("org.redisson.")) {
            i++;
        }
        if (i == st.length) {
            return true; // not in Redisson: it returned (a win the driver has not answered yet)
        }
        StackTraceElement top = st[i];
        if (top.getClassName().equals("org.redisson.command.CommandAsyncService")
                && (top.getMethodName().startsWith("get") || top.getMethodName().startsWith("syncSubscription"))) {
            // waiting on a future: the subscription's when called from lock/tryLock itself, the
            // lock script's when called from tryAcquire
            for (i++; i < st.length && !st[i].getClassName().startsWith("org.redisson."); i++) {
                // JDK frames between
            }
            if (i == st.length) {
                return true;
            }
            top = st[i];
        }
        if (!top.getClassName().equals("org.redisson.RedissonLock")) {
            return true;
        }
        for (String m : lockMethods) {
            if (top.getMethodName().equals(m)) {
                return false;
            }
        }
        return true;
    }
}
