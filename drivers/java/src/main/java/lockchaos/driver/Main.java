package lockchaos.driver;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisConnectionException;
import org.redisson.client.RedisTimeoutException;
import org.redisson.config.Config;

/**
 * A lockchaos driver (docs/driver-protocol.md) for Redisson's locks: JSON lines on stdin and
 * stdout. The main thread reads stdin and answers ping, clock, cancel and shutdown at once; the
 * lock calls run on the application's threads ({@link Worker}), since Redisson's RLock is owned by
 * a thread id (a re-entry must come from the same thread, and so must the unlock).
 *
 * <p>Locks ({@code --lock NAME}), a file each: {@link RLockDriver} ({@code redisson},
 * {@code redisson-lease}) and {@link MultiLockDriver} ({@code redisson-redlock},
 * {@code redisson-redlock-watchdog}, {@code redisson-multilock}); their clients' configuration is
 * {@link RedissonConfig}'s, their idioms (the API modes, the lock option {@code api}) are
 * {@link Idioms}'.
 *
 * <p>Each lease is a scope on one worker thread, as on an application's request thread: the acquire
 * enters the idiom ({@code lock.lock(); try { … } finally { lock.unlock(); }}), answers acquired
 * inside it and parks there; a re-entry of the key is a scope nested in it on the same thread; the
 * release returns from the scope (or throws the release's {@code throw}, the throw extension) and
 * the idiom's finally unlocks. A worker whose scopes have all ended is idle, and the next acquire
 * takes the one idle last, so a client's acquires run on one thread while it holds one lease at a
 * time. An idiom with no bound of its own ({@code lock()}) is bounded by wait_ms: at the deadline
 * the acquire answers not_acquired, or indeterminate when the lock's command may be in flight, and
 * the thread goes on (lock-interruptibly's is interrupted, as a caller's Future.cancel(true)
 * does); a lock it wins after that is unlocked at once on it, and it is idle again.
 *
 * <p>The cancel extension: the stdin thread answers {@code cancel} at once, interrupting the thread
 * in the call ({@link Thread#interrupt()}) when the request cancelled is the call in flight, or
 * marking it to start interrupted when it is still queued. The check, the interrupt and cancel_ok
 * are under the monitor of this Main, which a request's answer is written under too, with the end
 * of its in-flight state and the clearing of the thread's interrupt flag: cancel_ok comes before
 * the answer, and no interrupt reaches the next request.
 *
 * <p>The sigterm extension: the JVM runs its shutdown hooks on SIGTERM; the driver registers the
 * one an application registers, {@code redisson.shutdown()} of its clients (bounded: a hook that
 * hangs would keep the process), and nothing else: the threads in a scope are halted where they
 * are, their finally does not run.
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();
    static final Set<String> OPTIONS = Set.of("api", "version", "watchdog_timeout_ms", "retry_attempts", "master_timeout_ms", "warmup", "retry");
    /** How long the SIGTERM hook waits for redisson.shutdown() before it halts the JVM itself. */
    static final long HOOK_BOUND_MS = 5000;

    final DriverLock lock;
    final PrintStream out;
    final List<RedissonClient> clients = new CopyOnWriteArrayList<>();
    final Map<String, RLock> locks = new ConcurrentHashMap<>();
    /** The deadlines of unbounded idioms and the bound of a request queued behind a busy thread. */
    final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "lockchaos-deadline");
        t.setDaemon(true);
        return t;
    });

    // Set by init, read by the requests after it (each handed over through this Main's monitor and a queue).
    volatile String api;
    volatile long ttlDefault = 30000;
    // retry=driver (a multi-lock's try-lock): one tryLock(0, ttl) after another, retry_delay_ms ±
    // half apart, until wait_ms, instead of the library's tryLock(wait_ms, ttl).
    volatile boolean driverRetry;
    volatile long perMasterMs; // master_timeout_ms on independent masters, else 0
    volatile long retryDelayMs = 10;
    volatile long commandTimeoutMs = 1000;
    volatile boolean hooked;

    // Under this Main's monitor (which send takes too): the idle workers (the one idle last
    // first), each lease's scope, the worker whose scope holds a key, and the cancel extension's
    // state: the acquires, releases and extends in flight and their threads (one at a time as
    // lockchaos sends them; the map keeps a test's concurrent ones apart), the ones submitted and
    // not started, and those cancelled and not answered yet.
    final Deque<Worker> idle = new ArrayDeque<>();
    /** Every worker started (reset: one not idle is still in a call answered before). */
    final List<Worker> workersStarted = new ArrayList<>();
    final Map<String, Frame> leases = new HashMap<>();
    final Map<String, Worker> holders = new HashMap<>();
    long leaseSeq;
    int workerSeq;
    static final Set<String> CANCELLABLE = Set.of("acquire", "release", "extend");
    final Map<Long, Thread> inFlight = new HashMap<>();
    final Set<Long> queued = new HashSet<>();
    final Set<Long> cancelled = new HashSet<>();

    Main(DriverLock lock, PrintStream out) {
        this.lock = lock;
        this.out = out;
        timer.setRemoveOnCancelPolicy(true);
    }

    /** A request handed to a worker; started and answered under Main's monitor. */
    static final class Request {
        final long id;
        final String type;
        final JsonNode req;
        final boolean cancellable;
        boolean started;
        boolean answered;
        long t0;
        ScheduledFuture<?> bound;

        Request(long id, String type, JsonNode req, boolean cancellable) {
            this.id = id;
            this.type = type;
            this.req = req;
            this.cancellable = cancellable;
        }
    }

    /** One lease's scope on its worker. */
    static final class Frame {
        final Worker worker;
        final Request acquire;
        final String key;
        /** Set once acquired is answered. */
        String lease;
        /** The idiom ran the body: the lock was won. */
        boolean entered;
        /** The release that left the scope; null when it was left without one (a win after the deadline). */
        Request release;
        /** The throw extension's exception, thrown inside the scope. */
        RuntimeException thrown;

        Frame(Worker worker, Request acquire, String key) {
            this.worker = worker;
            this.acquire = acquire;
            this.key = key;
        }
    }

    /** An application thread: requests from its inbox, one lease's scope (and its re-entries) at a time. */
    final class Worker extends Thread {
        final BlockingQueue<Request> inbox = new LinkedBlockingQueue<>();
        /** Its open scopes, innermost first (under Main's monitor). */
        final Deque<Frame> frames = new ArrayDeque<>();

        Worker(int n) {
            super("lockchaos-lock-" + n);
            setDaemon(true);
        }

        @Override
        public void run() {
            for (;;) {
                Request r = next();
                if (r.type.equals("acquire")) {
                    acquire(r, this);
                } else {
                    generic(r, true);
                }
            }
        }

        Request next() {
            for (;;) {
                try {
                    return inbox.take();
                } catch (InterruptedException e) {
                    // an interrupt that came after its call's answer: the next request starts clean
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        // stdout carries protocol lines only: whatever else writes to System.out goes to stderr,
        // and so does Redisson's logging (slf4j-simple).
        PrintStream proto = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        String name = "redisson";
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--lock") && i + 1 < args.length) {
                name = args[++i];
            } else {
                System.err.println("usage: java -jar lockchaos-driver-java.jar [--lock NAME]");
                System.exit(2);
            }
        }
        new Main(DriverLock.of(name), proto).serve(System.in);
    }

    void serve(InputStream in) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        String line;
        while ((line = r.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode req;
            try {
                req = JSON.readTree(line);
            } catch (Exception e) {
                ObjectNode m = JSON.createObjectNode().put("type", "error").put("error", "not JSON: " + e.getMessage());
                send(m);
                continue;
            }
            long id = req.path("id").asLong(0);
            String type = req.path("type").asText("");
            switch (type) {
                case "ping": {
                    long t0 = System.nanoTime();
                    long t1 = System.nanoTime();
                    send(reply(id, "pong").put("t0", t0).put("t1", t1));
                    break;
                }
                case "clock": {
                    long mono = System.nanoTime();
                    Instant now = Instant.now();
                    send(reply(id, "clock_ok").put("mono_ns", mono)
                            .put("wall_ns", now.getEpochSecond() * 1_000_000_000L + now.getNano()));
                    break;
                }
                case "shutdown":
                    send(reply(id, "shutdown_ok"));
                    // halt, not exit: no shutdown hook (Redisson's netty) may hold the exit up.
                    Runtime.getRuntime().halt(0);
                    break;
                case "hello": {
                    send(hello(id, req));
                    // Load Redisson's classes while lockchaos sends init.
                    Thread t = new Thread(Main::warmUp, "lockchaos-warmup");
                    t.setDaemon(true);
                    t.start();
                    break;
                }
                case "cancel":
                    cancel(id, req.path("of").asLong(0));
                    break;
                case "reset":
                    send(reset(id));
                    break;
                default:
                    dispatch(new Request(id, type, req, CANCELLABLE.contains(type) && id > 0));
            }
        }
        Runtime.getRuntime().halt(0); // stdin closed: lockchaos is gone
    }

    /**
     * Hands r to its thread: a release to its lease's worker, an acquire of a key a scope holds to
     * that scope's worker (a re-entry, nested in it), anything else to the worker idle last (a new
     * one when none is). An acquire or a release not started within its bound (its worker is still
     * in an earlier call) is answered indeterminate.
     */
    synchronized void dispatch(Request r) {
        Worker w = null;
        if (r.type.equals("release")) {
            Frame f = leases.get(r.req.path("lease").asText());
            if (f == null) {
                send(reply(r.id, "error").put("error", "unknown lease " + r.req.path("lease").asText()));
                return;
            }
            w = f.worker;
        } else if (r.type.equals("acquire")) {
            w = holders.get(r.req.path("key").asText());
        }
        if (w == null) {
            w = idle.pollFirst();
            if (w == null) {
                w = new Worker(++workerSeq);
                workersStarted.add(w);
                w.start();
            }
        }
        if (r.cancellable) {
            queued.add(r.id);
        }
        if (r.type.equals("acquire") || r.type.equals("release")) {
            long ms = 2 * commandTimeoutMs + 3000 + (r.type.equals("acquire") ? Math.max(0, r.req.path("wait_ms").asLong(0)) : 0);
            r.bound = timer.schedule(() -> notStarted(r, ms), ms, MILLISECONDS);
        }
        w.inbox.add(r);
    }

    synchronized void notStarted(Request r, long ms) {
        if (r.started || r.answered) {
            return;
        }
        long t = System.nanoTime();
        answer(r, reply(r.id, "indeterminate").put("error", "not started within " + ms
                + " ms: its thread is still in an earlier call (a lock() that went on after its wait_ms)")
                .put("t0", t).put("t1", t), null, false);
    }

    /**
     * cancel of request of: delivered when it is the call in flight (its thread is interrupted) or
     * still queued (it starts interrupted); otherwise nothing is done. cancel_ok is written under
     * the monitor the request's answer is written under, so it comes first.
     */
    synchronized void cancel(long id, long of) {
        boolean delivered = false;
        if (of > 0 && inFlight.containsKey(of)) {
            cancelled.add(of);
            inFlight.get(of).interrupt();
            delivered = true;
        } else if (of > 0 && queued.contains(of)) {
            cancelled.add(of); // begin interrupts the thread as it starts
            delivered = true;
        }
        send(reply(id, "cancel_ok").put("delivered", delivered));
    }

    /**
     * r starts on this thread: in flight (cancellable) until its answer; one cancelled while queued
     * starts with the thread interrupted. False: it was answered already (its bound), not run.
     */
    synchronized boolean begin(Request r) {
        if (r.answered) {
            return false;
        }
        r.started = true;
        queued.remove(r.id);
        if (r.cancellable) {
            inFlight.put(r.id, Thread.currentThread());
            if (cancelled.contains(r.id)) {
                Thread.currentThread().interrupt();
            }
        }
        r.t0 = System.nanoTime();
        return true;
    }

    /**
     * r's answer m, once: a cancelled request whose call failed (failure) answers cancelled; the
     * end of the in-flight state and the clearing of a worker's interrupt flag are one step with
     * it. idleAfter: this worker's last scope ended with it, and it is idle before the answer goes
     * (the next acquire finds it). False when r was answered already.
     */
    synchronized boolean answer(Request r, ObjectNode m, Throwable failure, boolean idleAfter) {
        if (r.answered) {
            if (idleAfter) {
                toIdle(); // its call ended after the answer (at its bound): the worker is free again
            }
            return false;
        }
        r.answered = true;
        if (r.bound != null) {
            r.bound.cancel(false);
        }
        queued.remove(r.id);
        inFlight.remove(r.id);
        if (cancelled.remove(r.id) && failure != null) {
            // The call ended by the interrupt (or failed with it delivered): an acquire holds no
            // lease, a release's lease ended as it started.
            ObjectNode c = reply(r.id, "cancelled").put("error", describe(failure));
            c.set("t0", m.get("t0"));
            c.set("t1", m.get("t1"));
            if (m.has("raised")) {
                c.set("raised", m.get("raised"));
            }
            m = c;
        }
        if (idleAfter) {
            toIdle();
        }
        send(m);
        if (Thread.currentThread() instanceof Worker) {
            Thread.interrupted(); // a late interrupt (or one Redisson set again) never reaches the next request
        }
        return true;
    }

    /** This worker, its scopes all ended, is idle (the first the next acquire takes). */
    synchronized void toIdle() {
        if (Thread.currentThread() instanceof Worker w && w.frames.isEmpty() && !idle.contains(w)) {
            idle.push(w);
        }
    }

    /** A request that is not a lock call (init, extend): run and answered on its worker. */
    void generic(Request r, boolean idleAfter) {
        if (!begin(r)) {
            if (idleAfter) {
                toIdle();
            }
            return;
        }
        ObjectNode m;
        try {
            m = handle(r.id, r.type, r.req);
        } catch (Throwable e) {
            m = reply(r.id, "error").put("error", describe(e));
        }
        answer(r, m, null, idleAfter);
    }

    static void warmUp() {
        try {
            new Config().useSingleServer();
            Class.forName("org.redisson.Redisson");
            Class.forName("io.netty.channel.nio.NioEventLoopGroup");
        } catch (Throwable ignored) {
            // only a head start
        }
    }

    ObjectNode handle(long id, String type, JsonNode req) throws Exception {
        switch (type) {
            case "init": return init(id, req);
            case "release": return reply(id, "error").put("error", "unknown lease " + req.path("lease").asText());
            case "extend":
                // RLock has no owner-checked extension of its lease (expire() is not one).
                return reply(id, "error").put("error", "unsupported");
            default: return reply(id, "error").put("error", "unknown request type " + type);
        }
    }

    synchronized void send(ObjectNode m) {
        try {
            out.print(JSON.writeValueAsString(m));
            out.print('\n');
            out.flush();
        } catch (Exception e) {
            System.err.println("lockchaos driver: cannot write a reply: " + e);
        }
    }

    static void log(String s) {
        System.err.println("lockchaos driver: " + s);
    }

    static ObjectNode reply(long id, String type) {
        ObjectNode m = JSON.createObjectNode();
        m.put("in_reply_to", id);
        m.put("type", type);
        return m;
    }

    ObjectNode hello(long id, JsonNode req) {
        if (req.path("protocol").asInt(1) != 1) {
            return reply(id, "error").put("error", "protocol " + req.path("protocol").asInt() + " unsupported: this driver speaks 1");
        }
        ObjectNode m = reply(id, "hello_ok");
        m.put("protocol", 1);
        m.put("name", lock.name);
        m.put("library", "org.redisson:redisson");
        m.put("version", redissonVersion());
        m.put("language", "java");
        lock.capabilities.forEach(m.putArray("capabilities")::add);
        // Redisson's RLock tells its user nothing more than yes or no: no validity time, no
        // signal when the watchdog fails to renew, no fence, and its renewals are internal.
        m.putArray("reports");
        m.putArray("extensions").add("cancel").add("throw").add("sigterm").add("reset");
        lock.apis.forEach(m.putArray("apis")::add);
        OPTIONS.stream().sorted().forEach(m.putArray("options")::add);
        return m;
    }

    /** The Redisson version on the class path, from its jar's Maven metadata. */
    static String redissonVersion() {
        try (InputStream in = Main.class.getResourceAsStream("/META-INF/maven/org.redisson/redisson/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                String v = p.getProperty("version");
                if (v != null) {
                    return v;
                }
            }
        } catch (Exception ignored) {
            // fall through
        }
        String v = Redisson.class.getPackage().getImplementationVersion();
        return v != null ? v : "unknown";
    }

    /**
     * The reset extension (warm drivers): the run is over, its clients are shut down (in the
     * background: their connections close within a moment, and nothing of theirs is used again)
     * and the next init connects new ones, with a new connection name and so a new lock owner id.
     * Refused while a lease is held or a request is in flight (a watchdog would outlive the run).
     */
    synchronized ObjectNode reset(long id) {
        if (!leases.isEmpty() || !inFlight.isEmpty() || !queued.isEmpty()) {
            return reply(id, "error").put("error", "reset: " + leases.size() + " leases held, "
                    + (inFlight.size() + queued.size()) + " requests in flight");
        }
        for (Worker w : workersStarted) {
            if (!idle.contains(w)) {
                // Answered (at its bound, or cancelled) while Redisson still runs it: a
                // RedissonRedLock interrupted with its lock script on the wire spins for the life
                // of the process, and kept warm it would take the CPU of every later run.
                return reply(id, "error").put("error", "reset: a lock thread is still in a call answered before ("
                        + workers() + "): this process serves no other run");
            }
        }
        List<RedissonClient> old = new ArrayList<>(clients);
        clients.clear();
        locks.clear();
        Thread t = new Thread(() -> old.forEach(c -> {
            try {
                c.shutdown(0, 2, TimeUnit.SECONDS);
            } catch (Throwable e) {
                log("reset: redisson.shutdown() threw " + describe(e));
            }
        }), "lockchaos-reset");
        t.setDaemon(true);
        t.start();
        return reply(id, "reset_ok");
    }

    ObjectNode init(long id, JsonNode req) {
        if (!clients.isEmpty()) {
            return reply(id, "error").put("error", "init twice");
        }
        JsonNode opts = req.path("options");
        JsonNode extra = opts.path("extra");
        for (Iterator<String> it = extra.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!OPTIONS.contains(k)) {
                return reply(id, "error").put("error", "unknown option " + k + " (known: " + OPTIONS + ")");
            }
        }
        String have = redissonVersion();
        if (extra.has("version") && !extra.path("version").asText().equals(have)) {
            return reply(id, "error").put("error", "Redisson " + extra.path("version").asText()
                    + " asked for, this jar has " + have + ": scripts/drivers-java.sh " + extra.path("version").asText()
                    + " builds it, run.sh picks it by LOCKCHAOS_LOCK_VERSION");
        }
        // The API mode: the idiom the application calls Redisson with (Idioms), the default first.
        String mode = extra.path("api").asText(lock.apis.get(0));
        if (!lock.apis.contains(mode)) {
            return reply(id, "error").put("error", "api=" + mode + ": " + lock.name + " calls Redisson in modes "
                    + String.join(", ", lock.apis) + " (the default first)");
        }
        ttlDefault = opts.path("ttl_ms").asLong(ttlDefault);
        String retry = extra.path("retry").asText("library");
        if (!retry.equals("library") && !retry.equals("driver")) {
            return reply(id, "error").put("error", "retry=" + retry + ": want library or driver");
        }
        if (retry.equals("driver") && lock.multiNode() && !mode.equals("try-lock")) {
            return reply(id, "error").put("error", "retry=driver is api=try-lock's (tryLock(0, ttl) again until wait_ms"
                    + " instead of tryLock(wait_ms, ttl)); api=" + mode + " is Redisson's own lock() loop");
        }
        driverRetry = retry.equals("driver") && lock.multiNode();
        api = mode;
        commandTimeoutMs = Math.max(1, opts.path("command_timeout_ms").asLong(1000));
        retryDelayMs = Math.max(1, opts.path("retry_delay_ms").asLong(10));
        String topology = req.path("topology").asText("single");
        String connName = req.path("conn_name").asText("");
        JsonNode eps = req.path("endpoints");
        if (!eps.isArray() || eps.size() == 0) {
            return reply(id, "error").put("error", "init without endpoints");
        }
        String refused = lock.refuses(topology);
        if (refused != null) {
            return reply(id, "error").put("error", refused);
        }
        // RedissonRedLock asks the masters one after another, and a master that does not answer
        // costs it a whole timeout, twice when it then unlocks that master: master_timeout_ms,
        // where set, is the timeout of each master's lock (CommonOptions.timeout, the lock's own
        // commands only) instead of command_timeout_ms, a short one as the Redlock algorithm asks.
        perMasterMs = topology.equals("independent") && lock.multiNode() && eps.size() > 1
                ? extra.path("master_timeout_ms").asLong(0) : 0;
        if (perMasterMs > 0 && MultiLockDriver.TIMED_LOCK == null) {
            // Older Redisson has no timeout of a lock's own: command_timeout_ms would apply instead.
            return reply(id, "error").put("error", "master_timeout_ms unsupported: Redisson " + redissonVersion()
                    + " has no per-lock timeout (org.redisson.api.options.CommonOptions)");
        }
        long t0 = System.nanoTime();
        for (int attempt = 1; ; attempt++) {
            try {
                lock.connect(topology, eps, ep -> RedissonConfig.config("single", ep, connName, opts),
                        ep -> RedissonConfig.config(topology, ep, connName, opts), clients);
                break;
            } catch (Throwable e) {
                clients.forEach(c -> c.shutdown(0, 100, TimeUnit.MILLISECONDS));
                clients.clear();
                // A cold JVM can take longer than command_timeout_ms over its first commands
                // (CLIENT SETNAME on connect), more so on a loaded machine (a CI rehearsal's
                // redisson-lease failed both of two attempts): up to four, 200 ms apart, well
                // within the 30 s lockchaos gives init.
                if (attempt < 4 && classify(e).equals("indeterminate")) {
                    System.err.println("lockchaos driver: connecting again after " + describe(e));
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                    }
                    continue;
                }
                ObjectNode m = reply(id, "error").put("error", "connect: " + describe(e)).put("t0", t0).put("t1", System.nanoTime());
                // Could not reach the servers (a connection refused or timed out): the machine's
                // failure, which lockchaos tells from a refused option.
                return classify(e).equals("indeterminate") ? m.put("unavailable", true) : m;
            }
        }
        addShutdownHook();
        if (extra.path("warmup").asBoolean(false)) {
            warmUpLock(req.path("key_prefix").asText("") + "lockchaos-warmup");
        }
        long t1 = System.nanoTime();
        return reply(id, "init_ok").put("t0", t0).put("t1", t1);
    }

    /**
     * --lock-opt warmup=true: three acquires and releases of a key of the driver's own (under
     * key_prefix) before init answers, as a long-running service is warm: a cold JVM's first
     * RedLock acquire (classes, the lock scripts' NOSCRIPT and SCRIPT LOAD on every master, C1)
     * took 0.8-1.3 s on this machine, longer than a scenario's first trigger waits.
     */
    void warmUpLock(String key) {
        RLock rl = lockFor(key);
        try {
            for (int i = 0; i < 3; i++) {
                boolean ok = lock.watchdog ? rl.tryLock(0, TimeUnit.MILLISECONDS)
                        : rl.tryLock(0, ttlDefault, TimeUnit.MILLISECONDS);
                if (ok) {
                    rl.unlock();
                }
            }
            // The default idiom's own path too (lock(): its subscription to the key's
            // channel, used when it waits), on a key nobody else holds.
            if ("lock".equals(api) || "lock-lease".equals(api)) {
                if (lock.watchdog) {
                    rl.lock();
                } else {
                    rl.lock(ttlDefault, TimeUnit.MILLISECONDS);
                }
                rl.unlock();
            }
        } catch (Throwable e) {
            System.err.println("lockchaos driver: warm-up: " + describe(e));
        } finally {
            locks.remove(key);
        }
    }

    RLock lockFor(String key) {
        return locks.computeIfAbsent(key, k -> lock.lockFor(clients, k, perMasterMs));
    }


    /**
     * An acquire on worker w: the idiom of the api mode runs here, and the body it runs is the
     * lease's critical section ({@link #critical}), which answers acquired and parks until the
     * lease's release. What leaves the idiom answers the acquire when the lock was not won, else the
     * release. outermost: w held no scope before (it is idle again after the answer).
     */
    void acquire(Request r, Worker w) {
        boolean outermost;
        synchronized (this) {
            outermost = w.frames.isEmpty();
        }
        if (!begin(r)) {
            if (outermost) {
                toIdle();
            }
            return;
        }
        if (clients.isEmpty()) {
            answer(r, reply(r.id, "error").put("error", "acquire before init").put("t0", r.t0).put("t1", System.nanoTime()), null, outermost);
            return;
        }
        String key = r.req.path("key").asText();
        long ttl = r.req.path("ttl_ms").asLong(ttlDefault);
        long wait = Math.max(0, r.req.path("wait_ms").asLong(0));
        String mode = api;
        RLock rl = lockFor(key);
        int before;
        synchronized (this) {
            before = (int) w.frames.stream().filter(g -> g.key.equals(key)).count();
        }
        Frame f = new Frame(w, r, key);
        if (wait > 0 && Idioms.unbounded(mode)) {
            // lock() has no bound: the caller's Future.get(wait_ms); lockInterruptibly()'s caller
            // then cancels it (Future.cancel(true): an interrupt).
            boolean interrupt = mode.equals("lock-interruptibly");
            timer.schedule(() -> deadline(r, w, wait, interrupt), wait, MILLISECONDS);
        }
        Throwable outcome = null;
        try {
            Idioms.scope(mode, rl, new Idioms.Call(wait, ttl, lock.watchdog, driverRetry, retryDelayMs),
                    () -> critical(f, rl, before));
        } catch (Throwable e) {
            outcome = e;
        }
        long t1 = System.nanoTime();
        if (!f.entered) {
            // Not won: the acquire's answer (not_acquired, or what the acquire threw).
            ObjectNode m = outcome == null ? reply(r.id, "not_acquired")
                    : reply(r.id, classify(outcome)).put("error", describe(outcome));
            if (!answer(r, m.put("t0", r.t0).put("t1", t1), outcome, outermost)) {
                log(String.format("acquire %d of %s (api %s), answered at its wait_ms, ended %d ms after it began: %s",
                        r.id, key, mode, (t1 - r.t0) / 1_000_000, outcome == null ? "not acquired" : describe(outcome)));
                Thread.interrupted();
                if (outermost) {
                    toIdle();
                }
            }
            return;
        }
        Request rel = f.release;
        if (rel == null) {
            // Won after the acquire had answered (its wait_ms passed), or its release was answered
            // before it started: the scope was left at once, and its finally unlocked.
            log(String.format("acquire %d of %s (api %s), answered at its wait_ms, won %d ms after it began: unlocked at once: %s",
                    r.id, key, mode, (t1 - r.t0) / 1_000_000, outcome == null ? "released" : describe(outcome)));
            Thread.interrupted();
            if (outermost) {
                toIdle();
            }
            return;
        }
        // The release's answer: what leaving the scope did.
        ObjectNode m;
        Throwable failure = null;
        if (outcome == null || outcome == f.thrown) {
            m = reply(rel.id, "released");
        } else {
            // The finally's unlock() threw; in Java its exception replaces the application's.
            failure = outcome;
            m = reply(rel.id, classify(outcome)).put("error", describe(outcome)
                    + (f.thrown != null ? " (from the finally's unlock(): it replaced the application's exception)" : ""));
        }
        if (f.thrown != null) {
            m.put("raised", outcome == f.thrown);
        }
        answer(rel, m.put("t0", rel.t0).put("t1", t1), failure, outermost);
    }

    /**
     * The application's critical section inside the idiom: answers acquired (depth and token read
     * on this thread) and waits for lockchaos. A re-entry of the key runs nested here; the lease's
     * release returns (the scope is left normally) or throws its throw's RuntimeException. A win
     * after the acquire was answered (wait_ms passed) returns at once: the finally unlocks.
     */
    void critical(Frame f, RLock rl, int before) throws Exception {
        f.entered = true;
        long t1 = System.nanoTime();
        Request r = f.acquire;
        int depth = lock.depth(rl, before);
        String token = lock.token(clients);
        synchronized (this) {
            if (r.answered) {
                // The deadline answered it (and interrupted a lockInterruptibly() in the same step):
                // the interrupt must not reach the finally's unlock.
                Thread.interrupted();
                return;
            }
            f.lease = "L" + (++leaseSeq);
            leases.put(f.lease, f);
            f.worker.frames.push(f);
            holders.putIfAbsent(f.key, f.worker);
            ObjectNode m = reply(r.id, "acquired").put("lease", f.lease).put("depth", depth);
            if (token != null) {
                m.put("token", token);
            }
            answer(r, m.put("t0", r.t0).put("t1", t1), null, false);
        }
        for (;;) {
            Request q = f.worker.next();
            if (q.type.equals("acquire")) {
                acquire(q, f.worker); // a re-entry: a scope nested in this one
                continue;
            }
            if (!q.type.equals("release")) {
                generic(q, false);
                continue;
            }
            if (!q.req.path("lease").asText().equals(f.lease)) {
                if (begin(q)) {
                    answer(q, reply(q.id, "error").put("error", "lease " + q.req.path("lease").asText()
                            + " is not the innermost scope on its thread: " + f.lease + "'s is open inside it (release it first)")
                            .put("t0", q.t0).put("t1", System.nanoTime()), null, false);
                }
                continue;
            }
            boolean started = begin(q);
            synchronized (this) {
                // The application's lease ends here whatever the release does.
                leases.remove(f.lease);
                f.worker.frames.remove(f);
                if (f.worker.frames.stream().noneMatch(g -> g.key.equals(f.key))) {
                    holders.remove(f.key);
                }
            }
            if (!started) {
                return; // answered already (not started within its bound): leave all the same
            }
            f.release = q;
            if (q.req.hasNonNull("throw")) {
                // The throw extension: the application's code raises inside the scope.
                f.thrown = new RuntimeException(q.req.path("throw").asText());
                throw f.thrown;
            }
            return;
        }
    }

    /**
     * wait_ms passed with r's unbounded idiom (lock()) still in its acquire on w: not_acquired, or
     * indeterminate when the lock's command may be in flight (Idioms.mayTakeKey); the thread goes
     * on, interrupted for lock-interruptibly.
     */
    void deadline(Request r, Worker w, long wait, boolean interrupt) {
        synchronized (this) {
            if (r.answered) {
                return;
            }
            long t1 = System.nanoTime();
            boolean may = Idioms.mayTakeKey(w);
            ObjectNode m = reply(r.id, may ? "indeterminate" : "not_acquired");
            if (may) {
                m.put("error", "wait_ms " + wait + " passed with " + api + "'s acquire not waiting for a release (its lock command may be in flight): it goes on, and a win is unlocked at once");
            }
            answer(r, m.put("t0", r.t0).put("t1", t1), null, false);
            if (interrupt) {
                w.interrupt();
            }
        }
    }

    /**
     * The sigterm extension: the shutdown hook an application registers,
     * {@code Runtime.getRuntime().addShutdownHook(new Thread(redisson::shutdown))}, for every
     * client. The JVM runs it on SIGTERM and halts when it returns: the other threads stop where
     * they are (a scope's finally does not run). A hook that hangs would keep the process, so it is
     * bounded (HOOK_BOUND_MS, then halt); what the lock threads were doing before and after it goes
     * to stderr.
     */
    void addShutdownHook() {
        if (hooked) {
            return;
        }
        hooked = true;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            long t0 = System.nanoTime();
            log("SIGTERM: shutdown hook: redisson.shutdown(); lock threads: " + workers());
            Thread t = new Thread(() -> {
                for (RedissonClient c : clients) {
                    try {
                        c.shutdown();
                    } catch (Throwable e) {
                        log("redisson.shutdown() threw " + describe(e));
                    }
                }
            }, "lockchaos-redisson-shutdown");
            t.setDaemon(true);
            t.start();
            try {
                t.join(HOOK_BOUND_MS);
            } catch (InterruptedException ignored) {
                // the JVM is going anyway
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (t.isAlive()) {
                log("redisson.shutdown() still running after " + ms + " ms: halting; lock threads: " + workers());
                Runtime.getRuntime().halt(143);
            }
            log("redisson.shutdown() returned in " + ms + " ms; lock threads: " + workers());
        }, "lockchaos-shutdown-hook"));
    }

    /** Each lock thread's state and where it is (the innermost Redisson or driver frame), for the log. */
    synchronized String workers() {
        List<String> each = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (!(t instanceof Worker w)) {
                continue;
            }
            String at = "";
            for (StackTraceElement e : t.getStackTrace()) {
                if (e.getClassName().startsWith("org.redisson.") || e.getClassName().startsWith("lockchaos.")) {
                    at = e.getClassName().replaceAll(".*\\.", "") + "." + e.getMethodName();
                    break;
                }
            }
            each.add(t.getName() + " " + t.getState() + " scopes " + w.frames.size() + " in " + at);
        }
        return each.isEmpty() ? "none" : String.join("; ", each);
    }

    /** not_owner, indeterminate or error, from what Redisson threw. */
    static final Set<String> UNKNOWN_OUTCOME = Set.of("RedisRetryExhaustedException", "RedisNodeNotFoundException",
            "WriteRedisConnectionException", "TimeoutException", "ClosedChannelException", "ConnectException");

    static String classify(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof IllegalMonitorStateException) {
                return "not_owner";
            }
        }
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof RedisTimeoutException || c instanceof RedisConnectionException
                    || c instanceof java.io.IOException || UNKNOWN_OUTCOME.contains(c.getClass().getSimpleName())) {
                return "indeterminate";
            }
        }
        return "error";
    }

    static String describe(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = e; c != null && b.length() < 400; c = c.getCause() == c ? null : c.getCause()) {
            if (b.length() > 0) {
                b.append(": ");
            }
            b.append(c.getClass().getSimpleName());
            if (c.getMessage() != null) {
                b.append(' ').append(c.getMessage());
            }
        }
        return b.toString();
    }
}
