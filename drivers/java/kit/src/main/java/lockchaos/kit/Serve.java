package lockchaos.kit;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.locks.ReentrantLock;
import org.json.JSONObject;

/**
 * Serves a {@link DriverLock} over the lock-client protocol on stdin and stdout.
 *
 * <p>It answers the protocol's cancel extension (hello lists "cancel") as a Java application gives
 * up a call: the stdin thread interrupts the thread in the call ({@link Thread#interrupt()}) when
 * the request cancelled is the call in flight, or has it start interrupted when it is still queued;
 * cancel_ok at once. The request then answers with what its call did: "cancelled" when it threw
 * (the kit's retry sleep throws InterruptedException, so does a lock call that heeds interrupts),
 * its usual answer when it returned anyway. A cancelled acquire holds no lease; a cancelled
 * release's lease is over. The thread's interrupt flag is cleared before the next request runs.
 *
 * <p>A {@link ScopedLock} is served through its idiom: each lease's scope on a thread of its own
 * (the one idle last, so that one lease at a time keeps one thread), the API modes, and the throw
 * and sigterm extensions (see ScopedLock). Any other DriverLock's calls run on one worker thread.
 */
public final class Serve {
    private final DriverLock lock;
    private final ScopedLock scoped; // lock, when it is one; else null
    private final PrintStream out;
    private final ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "lockchaos-lock");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, String[]> leases = new HashMap<>(); // lease -> {key, token}; the worker's only
    private long seq;
    private static volatile long retryMs = 10;
    private volatile String api;
    /** How long the SIGTERM hook waits for the lock's onShutdown before the JVM halts. */
    static final long HOOK_BOUND_MS = 5000;

    // Under this Serve's monitor (which send takes too: a cancel_ok that says delivered comes
    // before the cancelled request's answer): the cancel extension's calls in flight and their
    // threads, the ones submitted and not started, and those cancelled and not answered yet;
    // a ScopedLock's idle scope threads (the one idle last first), its leases' scopes, and the
    // thread whose scope holds a key.
    private static final Set<String> CANCELLABLE = Set.of("acquire", "release", "extend");
    private final Map<Long, Thread> inFlight = new HashMap<>();
    private final Set<Long> queued = new HashSet<>();
    private final Set<Long> cancelled = new HashSet<>();
    private final Deque<ScopeThread> idle = new ArrayDeque<>();
    private final Map<String, Frame> scopes = new HashMap<>();
    private final Map<String, ScopeThread> holders = new HashMap<>();
    private int threads;
    /**
     * Held while a ScopedLock's own code runs (its idiom, its acquire and release calls), let go
     * while a scope's body waits for lockchaos: the team's calls never overlap, as on one worker,
     * though each scope has its thread.
     */
    private final ReentrantLock calls = new ReentrantLock();

    private Serve(DriverLock lock, PrintStream out) {
        this.lock = lock;
        this.scoped = lock instanceof ScopedLock s ? s : null;
        this.out = out;
    }

    /** Serves lock until shutdown or the end of stdin, then exits. stdout carries protocol lines only. */
    public static void serve(DriverLock lock) throws Exception {
        PrintStream proto = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        new Serve(lock, proto).loop();
    }

    /**
     * One attempt at key after another, retry_delay_ms apart, until waitMs (0: one attempt): the
     * token, or null when every attempt was refused (lock.acquire returned null or threw a
     * refusal). For a ScopedLock's idiom whose own wait this is.
     */
    public static String acquire(DriverLock lock, String key, long ttlMs, long waitMs) throws Exception {
        long until = System.nanoTime() + waitMs * 1_000_000;
        for (;;) {
            try {
                String token = lock.acquire(key, ttlMs);
                if (token != null) {
                    return token;
                }
            } catch (Exception e) {
                if (!lock.isRefusal(e)) {
                    throw e;
                }
            }
            if (System.nanoTime() + retryMs * 1_000_000 > until) {
                return null;
            }
            Thread.sleep(retryMs);
        }
    }

    private void loop() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            JSONObject req = new JSONObject(line);
            long id = req.optLong("id");
            switch (req.optString("type")) {
                case "ping" -> {
                    long t0 = System.nanoTime();
                    send(reply(id, "pong").put("t0", t0).put("t1", System.nanoTime()));
                }
                case "clock" -> {
                    Instant now = Instant.now();
                    send(reply(id, "clock_ok").put("mono_ns", System.nanoTime()).put("wall_ns", now.getEpochSecond() * 1_000_000_000L + now.getNano()));
                }
                case "shutdown" -> {
                    try {
                        worker.submit(lock::close).get();
                    } catch (Exception e) { // a close after a failed init, say: the process ends all the same
                        System.err.println("lockchaos kit: close: " + e);
                    }
                    send(reply(id, "shutdown_ok"));
                    Runtime.getRuntime().halt(0);
                }
                case "cancel" -> cancel(id, req.optLong("of"));
                default -> {
                    boolean cancellable = CANCELLABLE.contains(req.optString("type")) && id > 0;
                    if (cancellable) {
                        synchronized (this) {
                            queued.add(id);
                        }
                    }
                    if (scoped != null && isScopeCall(req)) {
                        dispatch(new Call(id, req, cancellable));
                    } else {
                        worker.submit(() -> run(id, req, cancellable));
                    }
                }
            }
        }
        Runtime.getRuntime().halt(0); // stdin closed: lockchaos is gone
    }

    /** cancel of request of: delivered when it is in flight (its thread is interrupted) or queued (it starts interrupted). */
    private synchronized void cancel(long id, long of) {
        boolean delivered = false;
        if (of > 0 && inFlight.containsKey(of)) {
            cancelled.add(of);
            inFlight.get(of).interrupt();
            delivered = true;
        } else if (of > 0 && queued.contains(of)) {
            cancelled.add(of);
            delivered = true;
        }
        send(reply(id, "cancel_ok").put("delivered", delivered));
    }

    /** The request starts on this thread: in flight, interrupted at once when cancelled while queued. */
    private synchronized void begin(long id, boolean cancellable) {
        if (cancellable) {
            queued.remove(id);
            inFlight.put(id, Thread.currentThread());
            if (cancelled.contains(id)) {
                Thread.currentThread().interrupt(); // cancelled before it started
            }
        }
    }

    /**
     * The answer m (t0, t1 set), cancelled instead when the request was cancelled and its call
     * threw; the end of its in-flight state and the clearing of the interrupt flag under one monitor.
     */
    private synchronized void answer(long id, JSONObject m, Exception threw) {
        inFlight.remove(id);
        queued.remove(id);
        if (cancelled.remove(id) && threw != null) {
            JSONObject c = reply(id, "cancelled").put("error", threw.toString()).put("t0", m.get("t0")).put("t1", m.get("t1"));
            if (m.has("raised")) {
                c.put("raised", m.get("raised"));
            }
            m = c;
        }
        send(m);
        Thread.interrupted(); // a late interrupt never reaches the next request
    }

    /** Whether e (or a cause) is a connection refused, broken or timed out: Java's own, or a client library's (RedisConnectionException, JedisConnectionException, ...). */
    static boolean unreachable(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            String n = c.getClass().getSimpleName();
            if (c instanceof java.io.IOException || n.contains("Connect") || n.contains("Timeout")) {
                return true;
            }
        }
        return false;
    }

    /** One request on the worker; the answer, the end of its in-flight state and the clearing of the interrupt flag under one monitor. */
    private void run(long id, JSONObject req, boolean cancellable) {
        begin(id, cancellable);
        long t0 = System.nanoTime();
        JSONObject m;
        Exception threw = null;
        try {
            m = handle(id, req);
        } catch (Exception e) { // not a refusal: the outcome at the server is unknown
            threw = e;
            m = reply(id, "indeterminate").put("error", e.toString());
        }
        long t1 = System.nanoTime();
        synchronized (this) {
            if (threw != null && cancelled.contains(id) && "release".equals(req.optString("type"))) {
                leases.remove(req.optString("lease")); // the application's lease is over: no second release
            }
            answer(id, m.put("t0", t0).put("t1", t1), threw);
        }
    }

    private JSONObject handle(long id, JSONObject req) throws Exception {
        switch (req.getString("type")) {
            case "hello": {
                DriverLock.Hello h = lock.hello();
                JSONObject m = reply(id, "hello_ok").put("protocol", 1).put("name", h.name()).put("library", h.library()).put("version", h.version())
                        .put("language", "java").put("capabilities", h.capabilities()).put("reports", h.reports());
                if (scoped == null) {
                    return m.put("options", new String[0]).put("extensions", new String[] {"cancel"});
                }
                return m.put("options", new String[] {"api"}).put("extensions", new String[] {"cancel", "throw", "sigterm"})
                        .put("apis", scoped.apis());
            }
            case "init":
                JSONObject opts = req.optJSONObject("options", new JSONObject());
                retryMs = Math.max(1, opts.optLong("retry_delay_ms", 10));
                if (scoped != null) {
                    String mode = opts.optJSONObject("extra", new JSONObject()).optString("api", scoped.apis().get(0));
                    if (!scoped.apis().contains(mode)) {
                        return reply(id, "error").put("error", "api=" + mode + ": " + lock.hello().name() + " offers "
                                + String.join(", ", scoped.apis()) + " (the default first)");
                    }
                    api = mode;
                }
                try {
                    lock.init(req);
                } catch (Exception e) {
                    JSONObject m = reply(id, "error").put("error", "init: " + e);
                    // A connection refused or timed out: the servers could not be reached (the
                    // machine's failure, which lockchaos tells from a refused option).
                    return unreachable(e) ? m.put("unavailable", true) : m;
                }
                if (scoped != null) {
                    addShutdownHook();
                }
                return reply(id, "init_ok");
            case "acquire":
                return acquire(id, req.getString("key"), req.getLong("ttl_ms"), req.optLong("wait_ms", 0));
            case "release": {
                String[] l = leases.get(req.getString("lease"));
                if (l == null) {
                    return reply(id, "error").put("error", "no lease " + req.getString("lease"));
                }
                boolean ok;
                try {
                    ok = lock.release(l[0], l[1]);
                } catch (Exception e) {
                    if (!lock.isRefusal(e)) {
                        throw e;
                    }
                    ok = false;
                }
                leases.remove(req.getString("lease")); // a definite answer: the lease is over
                return reply(id, ok ? "released" : "not_owner");
            }
            default:
                return reply(id, "error").put("error", "unsupported");
        }
    }

    /** One attempt after another, retryMs apart, until waitMs. */
    private JSONObject acquire(long id, String key, long ttlMs, long waitMs) throws Exception {
        String token = acquire(lock, key, ttlMs, waitMs);
        if (token == null) {
            return reply(id, "not_acquired");
        }
        String lease = "L" + (++seq);
        leases.put(lease, new String[] {key, token});
        return reply(id, "acquired").put("lease", lease).put("token", token).put("depth", 1);
    }

    // A ScopedLock's scopes.

    /** An acquire or release of a ScopedLock. */
    private record Call(long id, JSONObject req, boolean cancellable) {
        String type() {
            return req.getString("type");
        }
    }

    /** One lease's scope on its thread. */
    private static final class Frame {
        final ScopeThread thread;
        final String key;
        String lease;
        boolean entered;
        Call release;
        long releaseT0;
        RuntimeException thrown;

        Frame(ScopeThread thread, String key) {
            this.thread = thread;
            this.key = key;
        }
    }

    /** An application thread: one lease's scope (and its re-entries) at a time. */
    private final class ScopeThread extends Thread {
        final BlockingQueue<Call> inbox = new LinkedBlockingQueue<>();
        final Deque<Frame> frames = new ArrayDeque<>(); // innermost first, under Serve's monitor

        ScopeThread(int n) {
            super("lockchaos-scope-" + n);
            setDaemon(true);
        }

        @Override
        public void run() {
            for (;;) {
                Call c = next();
                if (c.type().equals("acquire")) {
                    scope(c, this);
                } else {
                    begin(c.id(), c.cancellable());
                    long t = System.nanoTime();
                    answer(c.id(), reply(c.id(), "error").put("error", "no lease " + c.req().optString("lease")).put("t0", t).put("t1", t), null);
                    toIdle(this);
                }
            }
        }

        Call next() {
            for (;;) {
                try {
                    return inbox.take();
                } catch (InterruptedException e) {
                    // a late interrupt: the next request starts clean
                }
            }
        }
    }

    private static boolean isScopeCall(JSONObject req) {
        String t = req.optString("type");
        return t.equals("acquire") || t.equals("release");
    }

    /** A release to its lease's thread, an acquire of a key a scope holds to that thread (a re-entry), else to the thread idle last. */
    private synchronized void dispatch(Call c) {
        ScopeThread t = null;
        if (c.type().equals("release")) {
            Frame f = scopes.get(c.req().optString("lease"));
            if (f == null) {
                queued.remove(c.id());
                long now = System.nanoTime();
                send(reply(c.id(), "error").put("error", "no lease " + c.req().optString("lease")).put("t0", now).put("t1", now));
                return;
            }
            t = f.thread;
        } else {
            t = holders.get(c.req().getString("key"));
        }
        if (t == null) {
            t = idle.pollFirst();
            if (t == null) {
                t = new ScopeThread(++threads);
                t.start();
            }
        }
        t.inbox.add(c);
    }

    private synchronized void toIdle(ScopeThread t) {
        if (t.frames.isEmpty() && !idle.contains(t)) {
            idle.push(t);
        }
    }

    private boolean refusal(Exception e) {
        return e instanceof IllegalMonitorStateException || lock.isRefusal(e);
    }

    /** An acquire on t: the lock's idiom runs here with the lease's critical section as its body. */
    private void scope(Call c, ScopeThread t) {
        boolean outermost;
        synchronized (this) {
            outermost = t.frames.isEmpty();
        }
        begin(c.id(), c.cancellable());
        String key = c.req().getString("key");
        Frame f = new Frame(t, key);
        long t0 = System.nanoTime();
        Exception outcome = null;
        try {
            calls.lockInterruptibly(); // a cancel while another call runs ends the wait: cancelled
            try {
                scoped.scope(api, key, c.req().getLong("ttl_ms"), c.req().optLong("wait_ms", 0), token -> critical(c, f, token, t0));
            } finally {
                calls.unlock();
            }
        } catch (Exception e) {
            outcome = e;
        }
        long t1 = System.nanoTime();
        if (outermost) {
            toIdle(t); // before the answer: the next acquire finds it
        }
        if (!f.entered) {
            JSONObject m = outcome == null || lock.isRefusal(outcome) ? reply(c.id(), "not_acquired")
                    : reply(c.id(), "indeterminate").put("error", outcome.toString());
            answer(c.id(), m.put("t0", t0).put("t1", t1), outcome);
            return;
        }
        Call rel = f.release;
        JSONObject m;
        Exception failure = null;
        if (outcome == null || outcome == f.thrown) {
            m = reply(rel.id(), "released");
        } else {
            failure = outcome;
            m = reply(rel.id(), refusal(outcome) ? "not_owner" : "indeterminate").put("error", outcome.toString());
        }
        if (f.thrown != null) {
            m.put("raised", outcome == f.thrown);
        }
        answer(rel.id(), m.put("t0", f.releaseT0).put("t1", t1), failure);
    }

    /** The critical section: answers acquired, then runs re-entries until its lease's release returns or throws. */
    private void critical(Call c, Frame f, String token, long t0) throws Exception {
        f.entered = true;
        long t1 = System.nanoTime();
        int depth;
        synchronized (this) {
            depth = 1 + (int) f.thread.frames.stream().filter(g -> g.key.equals(f.key)).count();
            f.lease = "L" + (++seq);
            scopes.put(f.lease, f);
            f.thread.frames.push(f);
            holders.putIfAbsent(f.key, f.thread);
        }
        answer(c.id(), reply(c.id(), "acquired").put("lease", f.lease).put("token", token).put("depth", depth).put("t0", t0).put("t1", t1), null);
        calls.unlock(); // the body waits: other calls may run
        try {
            critical(f);
        } finally {
            calls.lock(); // back into the team's code (its finally): uninterruptibly
        }
    }

    /** The body's wait: re-entries run nested, until its lease's release returns or throws. */
    private void critical(Frame f) throws Exception {
        for (;;) {
            Call q = f.thread.next();
            if (q.type().equals("acquire")) {
                scope(q, f.thread); // a re-entry, nested in this scope
                continue;
            }
            begin(q.id(), q.cancellable());
            if (!q.req().optString("lease").equals(f.lease)) {
                long now = System.nanoTime();
                answer(q.id(), reply(q.id(), "error").put("error", "lease " + q.req().optString("lease")
                        + " is not the innermost scope on its thread: release " + f.lease + " first").put("t0", now).put("t1", now), null);
                continue;
            }
            synchronized (this) {
                scopes.remove(f.lease); // the application's lease ends here, whatever the release does
                f.thread.frames.remove(f);
                if (f.thread.frames.stream().noneMatch(g -> g.key.equals(f.key))) {
                    holders.remove(f.key);
                }
            }
            f.release = q;
            f.releaseT0 = System.nanoTime();
            if (q.req().has("throw")) {
                f.thrown = new RuntimeException(q.req().getString("throw")); // the application's code raises
                throw f.thrown;
            }
            return;
        }
    }

    /** The sigterm extension: the application's shutdown hook (onShutdown), bounded; the JVM halts after it. */
    private void addShutdownHook() {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            long t0 = System.nanoTime();
            Thread t = new Thread(scoped::onShutdown, "lockchaos-on-shutdown");
            t.setDaemon(true);
            t.start();
            try {
                t.join(HOOK_BOUND_MS);
            } catch (InterruptedException ignored) {
                // the JVM is going anyway
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (t.isAlive()) {
                System.err.println("lockchaos kit: SIGTERM: onShutdown() still running after " + ms + " ms: halting");
                Runtime.getRuntime().halt(143);
            }
            System.err.println("lockchaos kit: SIGTERM: onShutdown() returned in " + ms + " ms; scopes open: " + openScopes());
        }, "lockchaos-shutdown-hook"));
    }

    private synchronized String openScopes() {
        List<String> l = new ArrayList<>(scopes.keySet());
        return l.isEmpty() ? "none" : String.join(", ", l);
    }

    private static JSONObject reply(long id, String type) {
        return new JSONObject().put("in_reply_to", id).put("type", type);
    }

    private synchronized void send(JSONObject m) {
        out.println(m);
    }
}
