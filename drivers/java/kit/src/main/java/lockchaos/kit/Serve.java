package lockchaos.kit;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.json.JSONObject;

/**
 * Serves a {@link DriverLock} over the lock-client protocol on stdin and stdout.
 *
 * <p>It answers the protocol's cancel extension (hello lists "cancel") as a Java application gives
 * up a call: the stdin thread interrupts the worker ({@link Thread#interrupt()}) when the request
 * cancelled is the call in flight, or has it start interrupted when it is still queued; cancel_ok
 * at once. The request then answers with what its call did: "cancelled" when it threw (the kit's
 * retry sleep throws InterruptedException, so does a lock call that heeds interrupts), its usual
 * answer when it returned anyway. A cancelled acquire holds no lease; a cancelled release's lease
 * is over. The worker's interrupt flag is cleared before the next request runs.
 */
public final class Serve {
    private final DriverLock lock;
    private final PrintStream out;
    private final ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "lockchaos-lock");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, String[]> leases = new HashMap<>(); // lease -> {key, token}; the worker's only
    private long seq, retryMs = 10;

    // The cancel extension, under this Serve's monitor (which send takes too: a cancel_ok that
    // says delivered comes before the cancelled request's answer): the acquire, release or extend
    // on the worker now (0: none) and the worker, the ones submitted and not started, and those
    // cancelled and not answered yet.
    private static final Set<String> CANCELLABLE = Set.of("acquire", "release", "extend");
    private long inFlight;
    private Thread inFlightThread;
    private final Set<Long> queued = new HashSet<>();
    private final Set<Long> cancelled = new HashSet<>();

    private Serve(DriverLock lock, PrintStream out) {
        this.lock = lock;
        this.out = out;
    }

    /** Serves lock until shutdown or the end of stdin, then exits. stdout carries protocol lines only. */
    public static void serve(DriverLock lock) throws Exception {
        PrintStream proto = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        new Serve(lock, proto).loop();
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
                    worker.submit(lock::close).get();
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
                    worker.submit(() -> run(id, req, cancellable));
                }
            }
        }
        Runtime.getRuntime().halt(0); // stdin closed: lockchaos is gone
    }

    /** cancel of request of: delivered when it is in flight (the worker is interrupted) or queued (it starts interrupted). */
    private synchronized void cancel(long id, long of) {
        boolean delivered = false;
        if (of > 0 && of == inFlight) {
            cancelled.add(of);
            inFlightThread.interrupt();
            delivered = true;
        } else if (of > 0 && queued.contains(of)) {
            cancelled.add(of);
            delivered = true;
        }
        send(reply(id, "cancel_ok").put("delivered", delivered));
    }

    /** One request on the worker; the answer, the end of its in-flight state and the clearing of the interrupt flag under one monitor. */
    private void run(long id, JSONObject req, boolean cancellable) {
        if (cancellable) {
            synchronized (this) {
                queued.remove(id);
                inFlight = id;
                inFlightThread = Thread.currentThread();
                if (cancelled.contains(id)) {
                    Thread.currentThread().interrupt(); // cancelled before it started
                }
            }
        }
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
            if (cancellable) {
                inFlight = 0;
                inFlightThread = null;
                if (cancelled.remove(id) && threw != null) {
                    m = reply(id, "cancelled").put("error", threw.toString());
                    if ("release".equals(req.optString("type"))) {
                        leases.remove(req.optString("lease")); // the application's lease is over: no second release
                    }
                }
            }
            send(m.put("t0", t0).put("t1", t1));
            Thread.interrupted(); // a late interrupt never reaches the next request
        }
    }

    private JSONObject handle(long id, JSONObject req) throws Exception {
        switch (req.getString("type")) {
            case "hello": {
                DriverLock.Hello h = lock.hello();
                return reply(id, "hello_ok").put("protocol", 1).put("name", h.name()).put("library", h.library()).put("version", h.version())
                        .put("language", "java").put("capabilities", h.capabilities()).put("reports", h.reports()).put("options", new String[0])
                        .put("extensions", new String[] {"cancel"});
            }
            case "init":
                retryMs = Math.max(1, req.optJSONObject("options", new JSONObject()).optLong("retry_delay_ms", 10));
                lock.init(req);
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
        long until = System.nanoTime() + waitMs * 1_000_000;
        for (;;) {
            String token = null;
            try {
                token = lock.acquire(key, ttlMs);
            } catch (Exception e) {
                if (!lock.isRefusal(e)) {
                    throw e;
                }
            }
            if (token != null) {
                String lease = "L" + (++seq);
                leases.put(lease, new String[] {key, token});
                return reply(id, "acquired").put("lease", lease).put("token", token).put("depth", 1);
            }
            if (System.nanoTime() + retryMs * 1_000_000 > until) {
                return reply(id, "not_acquired");
            }
            Thread.sleep(retryMs);
        }
    }

    private static JSONObject reply(long id, String type) {
        return new JSONObject().put("in_reply_to", id).put("type", type);
    }

    private synchronized void send(JSONObject m) {
        out.println(m);
    }
}
