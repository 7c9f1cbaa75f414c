package repro;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson: {@code RedissonRedLock.lock(lease)} (a {@code RedissonMultiLock}) on a thread
 * interrupted while a master's lock script is on the wire never returns. Redisson's sync
 * {@code get()} sets the interrupt flag again as it throws, {@code RedissonMultiLock.tryLock}
 * swallows each master's exception and starts over at once, and every later attempt sends its
 * lock script and fails the same way; each script re-enters the key for the thread and sets its
 * expiry again, so the key stays held while the process lives
 * (docs/findings/redisson-redlock-interrupted-spin.md).
 *
 * <p>The interleaving: three redis-servers of the test's own, each reached through a proxy in this
 * test that delays what the client sends by {@value #DELAY_MS} ms (lockchaos' scenario: 12 ms);
 * one RedissonClient per master (Redisson's defaults), one {@code RedissonRedLock} over the three.
 * An application thread calls {@code redLock.lock(500, MILLISECONDS)} on a free key and is
 * interrupted ({@code Thread.interrupt()}) {@value #INTERRUPT_AT_MS} ms into the call, while the
 * first master's script is in the proxy. The race is run up to {@value #ATTEMPTS} times (a fresh
 * key and thread each time) until an interrupt lands inside the call.
 *
 * <p>The property asserted (what Redisson should give): {@code lock()} on a free key, interrupted
 * or not, returns or throws within {@value #RETURN_WAIT_MS} ms, and once it has (and the thread
 * has unlocked what it was told it holds) the key is free on every master within twice the lease
 * (the longest lease RedissonMultiLock gives a master's key).
 */
@SuppressWarnings("deprecation") // RedissonRedLock is deprecated from 3.25.0; its code is RedissonMultiLock's
class InterruptedRedLockSpinTest {
    /** How many independent masters the RedLock spans. */
    static final int MASTERS = 3;
    /** What each proxy delays each chunk the client sends by (server to client: not delayed). */
    static final int DELAY_MS = 15;
    /** When the application thread is interrupted, after it entered lock(). */
    static final int INTERRUPT_AT_MS = 4;
    /** How many times the race is run before the test concludes the interrupt never landed in the call. */
    static final int ATTEMPTS = 5;
    /** The lease of lock(lease, unit): what lockchaos' driver passes is the scenario's TTL (200 ms). */
    static final long LEASE_MS = 500;
    /** How long lock() on a free key is given to return or throw after the interrupt. */
    static final long RETURN_WAIT_MS = 3000;
    /** Over how long the key's hold count is read twice, for the rate of re-entering scripts. */
    static final long RATE_WINDOW_MS = 500;
    /** How long another client's RedLock tries to take a key left held. */
    static final long OTHER_WAIT_MS = 1000;

    static final Process[] redis = new Process[MASTERS];
    static final int[] ports = new int[MASTERS];
    static final DelayProxy[] proxies = new DelayProxy[MASTERS];
    static final RedissonClient[] app = new RedissonClient[MASTERS];
    static final RedissonClient[] other = new RedissonClient[MASTERS];

    @BeforeAll
    static void start() throws Exception {
        String buildDir = System.getProperty("repro.build.dir", "target");
        new File(buildDir).mkdirs();
        for (int i = 0; i < MASTERS; i++) {
            ports[i] = freePort();
            redis[i] = new ProcessBuilder("/usr/bin/redis-server", "--bind", "127.0.0.1", "--port",
                    String.valueOf(ports[i]), "--save", "", "--appendonly", "no")
                    .redirectErrorStream(true)
                    .redirectOutput(new File(buildDir, "redis-server-" + (i + 1) + ".log"))
                    .start();
        }
        for (int i = 0; i < MASTERS; i++) {
            waitForRedis(i, 10_000);
            proxies[i] = new DelayProxy(ports[i], DELAY_MS);
            app[i] = client(proxies[i].port());
            other[i] = client(ports[i]);
        }
    }

    @AfterAll
    static void stop() throws InterruptedException {
        // A thread still inside lock() cannot be stopped by an interrupt (that is the bug); it is a
        // daemon, and goes with the JVM. The clients are shut down side by side, for at most 3 s:
        // an older Redisson's shutdown waits 15 s and more while that thread keeps sending scripts.
        try {
            List<Thread> closers = new ArrayList<>();
            for (RedissonClient[] cs : new RedissonClient[][] {app, other}) {
                for (RedissonClient c : cs) {
                    if (c == null) {
                        continue;
                    }
                    Thread th = new Thread(() -> {
                        try {
                            c.shutdown(0, 200, TimeUnit.MILLISECONDS);
                        } catch (RuntimeException e) {
                            System.err.println("repro: redisson shutdown: " + e);
                        }
                    }, "repro-shutdown");
                    th.setDaemon(true);
                    th.start();
                    closers.add(th);
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            int unfinished = 0;
            for (Thread th : closers) {
                th.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                if (th.isAlive()) {
                    unfinished++;
                }
            }
            if (unfinished > 0) {
                System.err.println("repro: " + unfinished + " RedissonClient shutdown(s) still running after 3 s "
                        + "(a thread stuck in lock() keeps its clients busy); the JVM's exit ends them");
            }
            for (DelayProxy p : proxies) {
                if (p != null) {
                    p.close();
                }
            }
        } finally {
            for (Process r : redis) {
                if (r == null) {
                    continue;
                }
                r.destroy();
                try {
                    if (!r.waitFor(5, TimeUnit.SECONDS)) {
                        r.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                    }
                } catch (InterruptedException e) {
                    r.destroyForcibly();
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    static RedissonClient client(int port) {
        Config c = new Config();
        c.useSingleServer().setAddress("redis://127.0.0.1:" + port);
        return Redisson.create(c);
    }

    static RLock redLock(RedissonClient[] clients, String name) {
        RLock[] each = new RLock[clients.length];
        for (int i = 0; i < clients.length; i++) {
            each[i] = clients[i].getLock(name);
        }
        return new RedissonRedLock(each);
    }

    /** What one interrupted lock() did. */
    static final class Attempt {
        volatile long startNanos;
        volatile long interruptNanos;
        volatile long endNanos; // when lock() returned or threw; 0 while it runs
        volatile boolean returned;
        volatile Throwable thrown;
        volatile Throwable unlockThrown;
        final CountDownLatch done = new CountDownLatch(1);

        double interruptAtMs() {
            return (interruptNanos - startNanos) / 1e6;
        }

        String outcome() {
            if (thrown == null) {
                return "returned";
            }
            String s = "threw " + thrown.getClass().getSimpleName();
            Throwable c = thrown.getCause();
            if (c != null && c != thrown) {
                s += " (cause " + c.getClass().getSimpleName() + ")";
            }
            return s;
        }
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void interruptedRedLockLockReturnsAndFreesTheKey() throws Exception {
        String version = System.getProperty("repro.redisson.version", "?");
        // Warm up the path (connections, the scripts' SHAs at the servers, the JIT) on a thread of its own.
        for (int i = 0; i < 5; i++) {
            String name = "warmup-" + i;
            Throwable[] err = new Throwable[1];
            Thread w = new Thread(() -> {
                try {
                    RLock l = redLock(app, name);
                    l.lock(LEASE_MS, TimeUnit.MILLISECONDS);
                    l.unlock();
                } catch (Throwable e) {
                    err[0] = e;
                }
            }, "app-warmup-" + i);
            w.setDaemon(true);
            w.start();
            w.join(10_000);
            if (w.isAlive() || err[0] != null) {
                fail("setup: the warm-up lock()/unlock() on a free key did not complete in 10 s: " + err[0]);
            }
        }

        int inFlight = 0;
        List<String> log = new ArrayList<>();
        Resp[] direct = new Resp[MASTERS];
        try {
            for (int m = 0; m < MASTERS; m++) {
                direct[m] = new Resp(ports[m]);
            }
            for (int i = 1; i <= ATTEMPTS; i++) {
                String name = "repro-redlock-" + i;
                RLock lock = redLock(app, name);
                Attempt a = new Attempt();
                CountDownLatch entered = new CountDownLatch(1);
                Thread t = new Thread(() -> {
                    a.startNanos = System.nanoTime();
                    entered.countDown();
                    try {
                        lock.lock(LEASE_MS, TimeUnit.MILLISECONDS);
                        a.returned = true;
                    } catch (Throwable e) {
                        a.thrown = e;
                    }
                    a.endNanos = System.nanoTime();
                    Thread.interrupted(); // as a thread pool clears it before the thread's next task
                    if (a.returned) { // what an application does next: its finally's unlock()
                        try {
                            lock.unlock();
                        } catch (Throwable e) {
                            a.unlockThrown = e;
                        }
                    }
                    a.done.countDown();
                }, "app-worker-" + i);
                t.setDaemon(true);
                t.start();
                if (!entered.await(10, TimeUnit.SECONDS)) {
                    fail("setup: the application thread did not start in 10 s");
                }
                long at = a.startNanos + TimeUnit.MILLISECONDS.toNanos(INTERRUPT_AT_MS);
                while (System.nanoTime() < at) {
                    LockSupport.parkNanos(at - System.nanoTime());
                }
                a.interruptNanos = System.nanoTime();
                t.interrupt();

                if (a.done.await(RETURN_WAIT_MS, TimeUnit.MILLISECONDS)) {
                    boolean inCall = a.endNanos > a.interruptNanos;
                    // The longest lease RedissonMultiLock gives a master's key is twice the lease.
                    long freeBy = a.endNanos + TimeUnit.MILLISECONDS.toNanos(2 * LEASE_MS + 200);
                    while (System.nanoTime() < freeBy) {
                        LockSupport.parkNanos(freeBy - System.nanoTime());
                    }
                    String held = heldOn(direct, name, t.getId());
                    String line = String.format("attempt %d: lock() interrupted %.1f ms into the call %s after %.1f ms%s; "
                                    + "%d ms later the key is %s",
                            i, a.interruptAtMs(), a.outcome(), (a.endNanos - a.startNanos) / 1e6,
                            a.unlockThrown == null ? "" : ", its unlock() threw " + a.unlockThrown,
                            2 * LEASE_MS + 200, held == null ? "free on every master" : "held: " + held);
                    log.add(line);
                    System.out.println("repro (Redisson " + version + "): " + line);
                    if (inCall) {
                        inFlight++;
                    }
                    if (held != null) {
                        fail(String.format("REPRODUCED: on Redisson %s, attempt %d of %d: RedissonRedLock over %d masters, "
                                        + "lock(%d ms lease) on a free key interrupted %.1f ms into the call %s, yet %d ms after "
                                        + "that the key is still held (%s)",
                                version, i, ATTEMPTS, MASTERS, LEASE_MS, a.interruptAtMs(), a.outcome(),
                                2 * LEASE_MS + 200, held));
                    }
                    continue;
                }

                // lock() has neither returned nor thrown: read what its thread does at the servers.
                inFlight++;
                long[] before = holdCounts(direct, name, t.getId());
                long t0 = System.nanoTime();
                Thread.sleep(RATE_WINDOW_MS);
                long[] after = holdCounts(direct, name, t.getId());
                double windowS = (System.nanoTime() - t0) / 1e9;
                long[] pttl = new long[MASTERS];
                for (int m = 0; m < MASTERS; m++) {
                    pttl[m] = direct[m].integer("PTTL", name);
                }
                String where = redissonFrame(t.getStackTrace());
                long w0 = System.nanoTime();
                RLock theirs = redLock(other, name);
                boolean got = theirs.tryLock(OTHER_WAIT_MS, LEASE_MS, TimeUnit.MILLISECONDS);
                long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - w0);
                if (got) {
                    theirs.unlock();
                }
                StringBuilder masters = new StringBuilder();
                long rate = 0;
                for (int m = 0; m < MASTERS; m++) {
                    masters.append(m == 0 ? "" : "; ").append("master ").append(m + 1).append(": ");
                    if (after[m] < 0) {
                        masters.append("not held by this thread (pttl ").append(pttl[m]).append(" ms)");
                    } else {
                        masters.append(String.format("count %d then %d, pttl %d ms", before[m], after[m], pttl[m]));
                        rate = Math.max(rate, Math.round((after[m] - Math.max(before[m], 0)) / windowS));
                    }
                }
                String alive = a.done.getCount() == 0 ? "it has since " + a.outcome() : "it is still running";
                fail(String.format("REPRODUCED: on Redisson %s, attempt %d of %d: RedissonRedLock over %d masters, "
                                + "lock(%d ms lease) on a free key interrupted %.1f ms into the call has not returned "
                                + "after %d ms (in %s); meanwhile the key holds this thread's field, re-entered by about %d "
                                + "lock scripts a second (the hold count read twice %d ms apart: %s); "
                                + "another client's RedLock tryLock(%d ms) %s; %s",
                        version, i, ATTEMPTS, MASTERS, LEASE_MS, a.interruptAtMs(), RETURN_WAIT_MS, where, rate,
                        RATE_WINDOW_MS, masters, OTHER_WAIT_MS,
                        got ? "took it after " + waited + " ms" : "could not take it (" + waited + " ms)", alive));
            }
        } finally {
            for (Resp r : direct) {
                if (r != null) {
                    r.close();
                }
            }
        }
        if (inFlight == 0) {
            fail("setup: in " + ATTEMPTS + " attempts the interrupt never came before lock() returned, "
                    + "so the race was not run (machine too slow or the proxy's delay too short):\n"
                    + String.join("\n", log));
        }
        System.out.printf("repro (Redisson %s): lock() returned or threw and the key was freed in %d attempts "
                + "(%d interrupted in the call)%n", version, ATTEMPTS, inFlight);
    }

    /** The hash field RedissonLock writes for a thread: "<client id>:<thread id>". */
    static String threadField(Map<String, String> hash, long threadId) {
        for (String k : hash.keySet()) {
            if (k.endsWith(":" + threadId)) {
                return k;
            }
        }
        return null;
    }

    /** The thread's hold count on each master's key, -1 where it has no field there. */
    static long[] holdCounts(Resp[] direct, String name, long threadId) throws IOException {
        long[] out = new long[direct.length];
        for (int m = 0; m < direct.length; m++) {
            Map<String, String> h = direct[m].hgetall(name);
            String f = threadField(h, threadId);
            out[m] = f == null ? -1 : Long.parseLong(h.get(f));
        }
        return out;
    }

    /** Which masters hold the key, and what, or null when none does. */
    static String heldOn(Resp[] direct, String name, long threadId) throws IOException {
        List<String> held = new ArrayList<>();
        for (int m = 0; m < direct.length; m++) {
            Map<String, String> h = direct[m].hgetall(name);
            if (!h.isEmpty()) {
                String f = threadField(h, threadId);
                held.add("master " + (m + 1) + ": " + (f != null ? "this thread's field at count " + h.get(f) : h)
                        + ", pttl " + direct[m].integer("PTTL", name) + " ms");
            }
        }
        return held.isEmpty() ? null : String.join("; ", held);
    }

    /** The outermost Redisson frame of the application thread's stack, e.g. RedissonMultiLock.lock. */
    static String redissonFrame(StackTraceElement[] stack) {
        String found = "?";
        for (StackTraceElement e : stack) {
            if (e.getClassName().startsWith("org.redisson.")) {
                found = e.getClassName().substring("org.redisson.".length()) + "." + e.getMethodName();
            }
        }
        return found;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    static void waitForRedis(int i, long timeoutMs) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        Exception last = null;
        while (System.nanoTime() < deadline) {
            if (!redis[i].isAlive()) {
                throw new IllegalStateException("setup: redis-server " + (i + 1) + " exited with " + redis[i].exitValue()
                        + " (its output: " + System.getProperty("repro.build.dir", "target") + "/redis-server-" + (i + 1)
                        + ".log)");
            }
            try (Resp r = new Resp(ports[i])) {
                if ("PONG".equals(r.cmd("PING"))) {
                    return;
                }
            } catch (IOException e) {
                last = e;
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("setup: redis-server on port " + ports[i] + " did not answer PING in "
                + timeoutMs + " ms", last);
    }

    /** A minimal RESP client straight to the server (not through the proxy), to read the key. */
    static final class Resp implements Closeable {
        final Socket s;
        final InputStream in;
        final OutputStream out;

        Resp(int port) throws IOException {
            s = new Socket();
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 2000);
            s.setSoTimeout(5000);
            s.setTcpNoDelay(true);
            in = new BufferedInputStream(s.getInputStream());
            out = s.getOutputStream();
        }

        Object cmd(String... args) throws IOException {
            StringBuilder b = new StringBuilder("*").append(args.length).append("\r\n");
            for (String a : args) {
                b.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(a).append("\r\n");
            }
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            return read();
        }

        long integer(String... args) throws IOException {
            return (Long) cmd(args);
        }

        Map<String, String> hgetall(String key) throws IOException {
            @SuppressWarnings("unchecked")
            List<Object> l = (List<Object>) cmd("HGETALL", key);
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i + 1 < l.size(); i += 2) {
                m.put((String) l.get(i), (String) l.get(i + 1));
            }
            return m;
        }

        private String line() throws IOException {
            StringBuilder b = new StringBuilder();
            int c;
            while ((c = in.read()) != '\r') {
                if (c < 0) {
                    throw new IOException("connection closed");
                }
                b.append((char) c);
            }
            in.read(); // '\n'
            return b.toString();
        }

        private Object read() throws IOException {
            int t = in.read();
            String l = line();
            switch (t) {
                case '+':
                    return l;
                case '-':
                    throw new IOException("redis: " + l);
                case ':':
                    return Long.parseLong(l);
                case '$': {
                    int n = Integer.parseInt(l);
                    if (n < 0) {
                        return null;
                    }
                    byte[] buf = in.readNBytes(n + 2);
                    return new String(buf, 0, n, StandardCharsets.UTF_8);
                }
                case '*': {
                    int n = Integer.parseInt(l);
                    List<Object> list = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        list.add(read());
                    }
                    return list;
                }
                default:
                    throw new IOException("redis: unexpected reply type " + (char) t);
            }
        }

        @Override
        public void close() throws IOException {
            s.close();
        }
    }

    /**
     * A TCP proxy on 127.0.0.1 to the server: each chunk the client sends is written to the server
     * DELAY ms after it was read (in order, by one scheduler thread); replies pass at once.
     */
    static final class DelayProxy implements Closeable {
        final ServerSocket listen;
        final int upstreamPort;
        final long delayMs;
        final ScheduledExecutorService sender = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "proxy-delayed-send");
            t.setDaemon(true);
            return t;
        });
        final List<Socket> sockets = new CopyOnWriteArrayList<>();
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        DelayProxy(int upstreamPort, long delayMs) throws IOException {
            this.upstreamPort = upstreamPort;
            this.delayMs = delayMs;
            listen = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread t = new Thread(this::acceptLoop, "proxy-accept");
            t.setDaemon(true);
            t.start();
        }

        int port() {
            return listen.getLocalPort();
        }

        private void acceptLoop() {
            while (!listen.isClosed()) {
                try {
                    Socket client = listen.accept();
                    Socket server = new Socket();
                    server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), upstreamPort), 2000);
                    client.setTcpNoDelay(true);
                    server.setTcpNoDelay(true);
                    sockets.add(client);
                    sockets.add(server);
                    start("proxy-to-server", () -> pumpDelayed(client, server));
                    start("proxy-to-client", () -> pump(server, client));
                } catch (IOException e) {
                    if (!listen.isClosed()) {
                        failure.compareAndSet(null, e);
                    }
                }
            }
        }

        private static void start(String name, Runnable r) {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            t.start();
        }

        private void pumpDelayed(Socket from, Socket to) {
            byte[] buf = new byte[16384];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buf)) >= 0) {
                    byte[] chunk = Arrays.copyOf(buf, n);
                    sender.schedule(() -> {
                        try {
                            out.write(chunk);
                            out.flush();
                        } catch (IOException e) {
                            closeQuietly(from, to);
                        }
                    }, delayMs, TimeUnit.MILLISECONDS);
                }
                sender.schedule(() -> closeQuietly(from, to), delayMs, TimeUnit.MILLISECONDS);
            } catch (IOException | java.util.concurrent.RejectedExecutionException e) {
                closeQuietly(from, to);
            }
        }

        private static void pump(Socket from, Socket to) {
            byte[] buf = new byte[16384];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buf)) >= 0) {
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // the other side closed
            }
            closeQuietly(from, to);
        }

        private static void closeQuietly(Socket... ss) {
            for (Socket s : ss) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // closing
                }
            }
        }

        @Override
        public void close() {
            try {
                listen.close();
            } catch (IOException ignored) {
                // closing
            }
            sender.shutdownNow();
            for (Socket s : sockets) {
                closeQuietly(s);
            }
        }
    }
}
