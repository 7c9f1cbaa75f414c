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
import java.util.concurrent.ExecutorService;
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
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson: a {@code tryLock} interrupted while its lock script is on the wire throws, yet the
 * script runs at the server and takes the key for the thread; the thread's next
 * {@code lock()} re-enters that level (hold count 2) and its {@code unlock()} leaves the key held
 * (count 1), by nobody who knows it (docs/findings/redisson-interrupted-trylock-level.md).
 *
 * <p>The interleaving: the application's client reaches Redis through a proxy in this test that
 * delays what the client sends by {@value #DELAY_MS} ms (lockchaos' scenario: 12 ms); an
 * application thread calls {@code lock.tryLock(2, SECONDS)} on a free key and is interrupted
 * ({@code Thread.interrupt()}) {@value #INTERRUPT_AT_MS} ms into the call, while the script is
 * in the proxy. The race is repeated up to {@value #ATTEMPTS} times (a fresh key each time): the
 * test fails at the first attempt that leaves the key held after the thread's own last unlock.
 *
 * <p>The property asserted (what Redisson should give): whatever {@code tryLock} answered when
 * interrupted, once the thread has released every hold it was told it has (none when tryLock
 * threw, one when it returned true) and then done one {@code lock()} and {@code unlock()}, the
 * key is free.
 */
class InterruptedTryLockLevelTest {
    /** What the proxy delays each chunk the client sends by (server to client: not delayed). */
    static final int DELAY_MS = 15;
    /** When the application thread is interrupted, after it entered tryLock. */
    static final int INTERRUPT_AT_MS = 4;
    /** How many times the race is run before the test concludes that Redisson keeps no level. */
    static final int ATTEMPTS = 8;
    /** lockWatchdogTimeout: what lockchaos sets (the scenario's TTL); the rest is Redisson's defaults. */
    static final long WATCHDOG_MS = 300;
    /** How long the other client tries to take a key left held. */
    static final long OTHER_WAIT_MS = 2000;

    static Process redis;
    static int redisPort;
    static DelayProxy proxy;
    static RedissonClient app;
    static RedissonClient other;
    static Thread worker;
    static ExecutorService workerPool;

    @BeforeAll
    static void start() throws Exception {
        String buildDir = System.getProperty("repro.build.dir", "target");
        new File(buildDir).mkdirs();
        redisPort = freePort();
        redis = new ProcessBuilder("/usr/bin/redis-server", "--bind", "127.0.0.1", "--port",
                String.valueOf(redisPort), "--save", "", "--appendonly", "no")
                .redirectErrorStream(true)
                .redirectOutput(new File(buildDir, "redis-server.log"))
                .start();
        waitForRedis(redisPort, 10_000);
        proxy = new DelayProxy(redisPort, DELAY_MS);
        app = client(proxy.port());
        other = client(redisPort);
        workerPool = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "app-worker");
            t.setDaemon(true);
            worker = t;
            return t;
        });
    }

    @AfterAll
    static void stop() {
        try {
            if (workerPool != null) {
                workerPool.shutdownNow();
            }
            for (RedissonClient c : new RedissonClient[] {app, other}) {
                if (c != null) {
                    try {
                        c.shutdown(0, 2, TimeUnit.SECONDS);
                    } catch (RuntimeException e) {
                        System.err.println("repro: redisson shutdown: " + e);
                    }
                }
            }
            if (proxy != null) {
                proxy.close();
            }
        } finally {
            if (redis != null) {
                redis.destroy();
                try {
                    if (!redis.waitFor(5, TimeUnit.SECONDS)) {
                        redis.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                    }
                } catch (InterruptedException e) {
                    redis.destroyForcibly();
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    static RedissonClient client(int port) {
        Config c = new Config();
        c.setLockWatchdogTimeout(WATCHDOG_MS);
        c.useSingleServer().setAddress("redis://127.0.0.1:" + port);
        return Redisson.create(c);
    }

    /** What one interrupted tryLock did. */
    static final class Attempt {
        volatile long startNanos;
        volatile long interruptNanos;
        long endNanos;
        Boolean returned; // tryLock's answer, null when it threw
        Throwable thrown;

        double interruptAtMs() {
            return (interruptNanos - startNanos) / 1e6;
        }

        double callMs() {
            return (endNanos - startNanos) / 1e6;
        }

        String outcome() {
            if (thrown == null) {
                return "returned " + returned;
            }
            String s = "threw " + thrown.getClass().getSimpleName();
            Throwable c = thrown.getCause();
            if (c != null && c != thrown) {
                s += " (cause " + c.getClass().getSimpleName() + ")";
            } else if (thrown.getMessage() != null) {
                String m = thrown.getMessage();
                s += " (\"" + (m.length() > 60 ? m.substring(0, 60) + "..." : m) + "\")";
            }
            return s;
        }
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void interruptedTryLockLeavesNoHoldAfterTheThreadsLastUnlock() throws Exception {
        String version = System.getProperty("repro.redisson.version", "?");
        // Warm up the application thread's path (connections, the script's SHA at the server, the JIT).
        for (int i = 0; i < 5; i++) {
            String name = "warmup-" + i;
            Boolean got = onWorker(() -> {
                RLock l = app.getLock(name);
                boolean ok = l.tryLock(2, TimeUnit.SECONDS);
                if (ok) {
                    l.unlock();
                }
                return ok;
            });
            if (!got) {
                fail("setup: the warm-up tryLock on a free key answered false");
            }
        }

        int threw = 0;
        int returnedTrue = 0;
        int inFlight = 0;
        List<String> log = new ArrayList<>();
        try (Resp direct = new Resp(redisPort)) {
            for (int i = 1; i <= ATTEMPTS; i++) {
                String name = "repro-lock-" + i;
                RLock lock = app.getLock(name);
                Attempt a = new Attempt();
                CountDownLatch entered = new CountDownLatch(1);
                java.util.concurrent.Future<Attempt> f = workerPool.submit(() -> {
                    a.startNanos = System.nanoTime();
                    entered.countDown();
                    try {
                        a.returned = lock.tryLock(2, TimeUnit.SECONDS);
                    } catch (Throwable t) {
                        a.thrown = t;
                    }
                    a.endNanos = System.nanoTime();
                    Thread.interrupted(); // as a thread pool clears it before the thread's next task
                    // What an application does with tryLock's answer: release the hold it was told of.
                    if (Boolean.TRUE.equals(a.returned)) {
                        lock.unlock();
                    }
                    return a;
                });
                if (!entered.await(10, TimeUnit.SECONDS)) {
                    fail("setup: the application thread did not start its task in 10 s");
                }
                long at = a.startNanos + TimeUnit.MILLISECONDS.toNanos(INTERRUPT_AT_MS);
                while (System.nanoTime() < at) {
                    LockSupport.parkNanos(at - System.nanoTime());
                }
                a.interruptNanos = System.nanoTime();
                worker.interrupt();
                f.get(10, TimeUnit.SECONDS);
                if (a.thrown != null) {
                    threw++;
                } else if (Boolean.TRUE.equals(a.returned)) {
                    returnedTrue++;
                }
                if (a.endNanos > a.interruptNanos) {
                    inFlight++;
                }

                // Let the script in the proxy reach the server (it left the client before the interrupt).
                Thread.sleep(4L * DELAY_MS);
                Map<String, String> afterCall = direct.hgetall(name);
                String mine = threadField(afterCall, worker.getId());

                // The thread's next task: lock() and unlock() in a finally, as an application does.
                int[] holds = onWorker(() -> {
                    lock.lock();
                    int h = -1;
                    try {
                        h = lock.getHoldCount();
                    } finally {
                        lock.unlock();
                    }
                    return new int[] {h, lock.getHoldCount()};
                });
                Map<String, String> afterUnlock = direct.hgetall(name);
                long pttl = direct.integer("PTTL", name);

                String line = String.format(
                        "attempt %d: tryLock interrupted %.1f ms into the call %s after %.1f ms; %d ms later the key held %s; "
                                + "next lock() hold count %d; after unlock() the key holds %s (pttl %d ms)",
                        i, a.interruptAtMs(), a.outcome(), a.callMs(), 4L * DELAY_MS,
                        mine == null ? describe(afterCall) : "this thread's field at count " + afterCall.get(mine),
                        holds[0], describe(afterUnlock), pttl);
                log.add(line);
                System.out.println("repro (Redisson " + version + "): " + line);

                if (!afterUnlock.isEmpty()) {
                    // The thread released every hold it knows of, yet the key is held: see whether
                    // another client can have it (a watchdog renewing it keeps it from everyone).
                    long t0 = System.nanoTime();
                    RLock theirs = other.getLock(name);
                    boolean got = theirs.tryLock(OTHER_WAIT_MS, TimeUnit.MILLISECONDS);
                    long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                    if (got) {
                        theirs.unlock();
                    }
                    String countLeft = afterUnlock.size() == 1 ? afterUnlock.values().iterator().next()
                            : describe(afterUnlock);
                    String keyAfterCall = mine != null
                            ? "the key held this thread's field at count " + afterCall.get(mine)
                            : "the key held " + describe(afterCall);
                    fail(String.format("REPRODUCED: on Redisson %s, attempt %d of %d, tryLock(2 s) interrupted %.1f ms "
                                    + "into the call %s, yet %d ms later %s; the thread's next lock() answered hold count %d "
                                    + "and after its unlock() the key is still held (count %s, pttl %d ms), "
                                    + "and another client %s",
                            version, i, ATTEMPTS, a.interruptAtMs(), a.outcome(), 4L * DELAY_MS, keyAfterCall,
                            holds[0], countLeft, pttl,
                            got ? "took it only after " + waited + " ms"
                                    : "could not take it in " + waited + " ms"));
                }
            }
        }
        if (inFlight == 0) {
            fail("setup: in " + ATTEMPTS + " attempts the interrupt never came before tryLock returned, "
                    + "so the race was not run (machine too slow or the proxy's delay too short):\n"
                    + String.join("\n", log));
        }
        System.out.printf("repro (Redisson %s): no level kept in %d attempts (%d interrupted in the call; "
                + "tryLock threw %d times, returned true %d times)%n", version, ATTEMPTS, inFlight, threw, returnedTrue);
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

    static String describe(Map<String, String> hash) {
        return hash.isEmpty() ? "nothing (free)" : hash.toString();
    }

    interface Task<T> {
        T run() throws Exception;
    }

    /** Runs a task on the application thread, waiting at most 10 s. */
    static <T> T onWorker(Task<T> task) throws Exception {
        return workerPool.submit(task::run).get(10, TimeUnit.SECONDS);
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    static void waitForRedis(int port, long timeoutMs) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        Exception last = null;
        while (System.nanoTime() < deadline) {
            if (!redis.isAlive()) {
                throw new IllegalStateException("setup: redis-server exited with " + redis.exitValue()
                        + " (its output: " + System.getProperty("repro.build.dir", "target") + "/redis-server.log)");
            }
            try (Resp r = new Resp(port)) {
                if ("PONG".equals(r.cmd("PING"))) {
                    return;
                }
            } catch (IOException e) {
                last = e;
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("setup: redis-server on port " + port + " did not answer PING in "
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
