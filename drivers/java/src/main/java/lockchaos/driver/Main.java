package lockchaos.driver;

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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisConnectionException;
import org.redisson.client.RedisTimeoutException;
import org.redisson.config.Config;

/**
 * A lockchaos driver (docs/driver-protocol.md) for Redisson's locks: JSON lines on stdin and
 * stdout. The main thread reads stdin and answers ping, clock and shutdown at once; every other
 * request runs on one dedicated lock thread, since Redisson's RLock is owned by a thread id
 * (a re-entry must come from the same thread, and so must the unlock).
 *
 * <p>Locks ({@code --lock NAME}), a file each: {@link RLockDriver} ({@code redisson},
 * {@code redisson-lease}) and {@link MultiLockDriver} ({@code redisson-redlock},
 * {@code redisson-redlock-watchdog}, {@code redisson-multilock}); their clients' configuration is
 * {@link RedissonConfig}'s.
 *
 * <p>The cancel extension: the stdin thread answers {@code cancel} at once, interrupting the lock
 * thread ({@link Thread#interrupt()}) when the request cancelled is the call in flight, or marking
 * it to start interrupted when it is still queued. The check, the interrupt and cancel_ok are
 * under the monitor of this Main, which a request's task also holds to write its answer, leave
 * the in-flight state and clear the thread's interrupt flag: cancel_ok comes before the answer,
 * and no interrupt reaches the next request.
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();
    static final Set<String> OPTIONS = Set.of("version", "watchdog_timeout_ms", "retry_attempts", "master_timeout_ms", "warmup", "retry");

    final DriverLock lock;
    final PrintStream out;
    final ExecutorService lockThread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "lockchaos-lock");
        t.setDaemon(true);
        return t;
    });
    // Only the lock thread touches these.
    final List<RedissonClient> clients = new ArrayList<>();
    final Map<String, RLock> locks = new HashMap<>();
    final Map<String, String> leases = new HashMap<>(); // lease -> key
    final Map<String, Integer> held = new HashMap<>();  // key -> leases not yet released
    long leaseSeq;
    long ttlDefault = 30000;
    // retry=driver (multi-node locks): a waiting acquire is one tryLock(0, ttl) after another,
    // retry_delay_ms ± half apart, until wait_ms, instead of the library's tryLock(wait_ms, ttl).
    boolean driverRetry;
    long perMasterMs; // master_timeout_ms on independent masters, else 0
    long retryDelayMs = 10;
    /** What the request's Redisson call threw (set by failure), for a cancelled answer; the lock thread's. */
    Throwable callFailure;

    // The cancel extension, under this Main's monitor (which send takes too): the acquire,
    // release or extend on the lock thread now (0: none) and the thread, the ones submitted and
    // not started, and those cancelled and not answered yet.
    static final Set<String> CANCELLABLE = Set.of("acquire", "release", "extend");
    long inFlight;
    Thread inFlightThread;
    final Set<Long> queued = new HashSet<>();
    final Set<Long> cancelled = new HashSet<>();

    Main(DriverLock lock, PrintStream out) {
        this.lock = lock;
        this.out = out;
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
                case "hello":
                    send(hello(id, req));
                    // Load Redisson's classes on the lock thread while lockchaos sends init.
                    lockThread.submit(Main::warmUp);
                    break;
                case "cancel":
                    cancel(id, req.path("of").asLong(0));
                    break;
                default: {
                    boolean cancellable = CANCELLABLE.contains(type) && id > 0;
                    if (cancellable) {
                        synchronized (this) {
                            queued.add(id);
                        }
                    }
                    lockThread.submit(() -> run(id, type, req, cancellable));
                }
            }
        }
        Runtime.getRuntime().halt(0); // stdin closed: lockchaos is gone
    }

    /**
     * cancel of request of: delivered when it is the call in flight (the lock thread is
     * interrupted) or still queued (it starts interrupted); otherwise nothing is done. cancel_ok
     * is written under the monitor the request's answer is written under, so it comes first.
     */
    synchronized void cancel(long id, long of) {
        boolean delivered = false;
        if (of > 0 && of == inFlight) {
            cancelled.add(of);
            inFlightThread.interrupt();
            delivered = true;
        } else if (of > 0 && queued.contains(of)) {
            cancelled.add(of); // run interrupts the thread as it starts
            delivered = true;
        }
        send(reply(id, "cancel_ok").put("delivered", delivered));
    }

    /**
     * One request on the lock thread: in flight (cancellable) from its start to its answer; a
     * request cancelled while queued starts with the thread interrupted; a cancelled one whose
     * call threw answers cancelled. The answer, the end of the in-flight state and the clearing of
     * the interrupt flag are one step under the monitor cancel takes.
     */
    void run(long id, String type, JsonNode req, boolean cancellable) {
        if (cancellable) {
            synchronized (this) {
                queued.remove(id);
                inFlight = id;
                inFlightThread = Thread.currentThread();
                if (cancelled.contains(id)) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        callFailure = null;
        ObjectNode m;
        try {
            m = handle(id, type, req);
        } catch (Throwable e) {
            m = reply(id, "error").put("error", describe(e));
        }
        synchronized (this) {
            if (cancellable) {
                inFlight = 0;
                inFlightThread = null;
                if (cancelled.remove(id) && callFailure != null) {
                    // The call ended by the interrupt (or failed with it delivered): an acquire
                    // recorded no lease, a release removed its lease before its call.
                    ObjectNode c = reply(id, "cancelled").put("error", describe(callFailure));
                    c.set("t0", m.get("t0"));
                    c.set("t1", m.get("t1"));
                    m = c;
                }
            }
            send(m);
            Thread.interrupted(); // a late interrupt (or one Redisson set again) never reaches the next request
        }
        callFailure = null;
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
            case "acquire": return acquire(id, req);
            case "release": return release(id, req);
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
        m.putArray("extensions").add("cancel");
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
        ttlDefault = opts.path("ttl_ms").asLong(ttlDefault);
        String retry = extra.path("retry").asText("library");
        if (!retry.equals("library") && !retry.equals("driver")) {
            return reply(id, "error").put("error", "retry=" + retry + ": want library or driver");
        }
        driverRetry = retry.equals("driver") && lock.multiNode();
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
                // (CLIENT SETNAME on connect); the second attempt runs warm.
                if (attempt < 2 && classify(e).equals("indeterminate")) {
                    System.err.println("lockchaos driver: connecting again after " + describe(e));
                    continue;
                }
                return reply(id, "error").put("error", "connect: " + describe(e)).put("t0", t0).put("t1", System.nanoTime());
            }
        }
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
        } catch (Throwable e) {
            System.err.println("lockchaos driver: warm-up: " + describe(e));
        } finally {
            locks.remove(key);
        }
    }

    RLock lockFor(String key) {
        return locks.computeIfAbsent(key, k -> lock.lockFor(clients, k, perMasterMs));
    }

    ObjectNode acquire(long id, JsonNode req) {
        if (clients.isEmpty()) {
            return reply(id, "error").put("error", "acquire before init");
        }
        String key = req.path("key").asText();
        long ttl = req.path("ttl_ms").asLong(ttlDefault);
        long wait = req.path("wait_ms").asLong(0);
        RLock rl = lockFor(key);
        int before = held.getOrDefault(key, 0);
        boolean ok = false;
        Throwable err = null;
        long t0 = System.nanoTime();
        try {
            if (driverRetry && wait > 0) {
                // RedissonMultiLock.tryLock(wait, lease) sets each master's key with a lease of
                // 2 x wait until every master has answered (then PEXPIREs them to the lease) and
                // waits up to wait/n on each held master in turn; tryLock(0, lease) is one round
                // with the lease itself, retried here until wait_ms.
                long end = t0 + wait * 1_000_000L;
                for (;;) {
                    ok = lock.watchdog ? rl.tryLock(0, TimeUnit.MILLISECONDS)
                            : rl.tryLock(0, ttl, TimeUnit.MILLISECONDS);
                    long left = end - System.nanoTime();
                    if (ok || left <= 0) {
                        break;
                    }
                    long d = retryDelayMs + ThreadLocalRandom.current().nextLong(-retryDelayMs / 2, retryDelayMs / 2 + 1);
                    Thread.sleep(Math.max(0, Math.min(d, left / 1_000_000L)));
                    if (System.nanoTime() >= end) {
                        break;
                    }
                }
            } else {
                ok = lock.watchdog ? rl.tryLock(wait, TimeUnit.MILLISECONDS)
                        : rl.tryLock(wait, ttl, TimeUnit.MILLISECONDS);
            }
        } catch (Throwable e) {
            err = e;
        }
        long t1 = System.nanoTime();
        if (err != null) {
            return failure(id, err, t0, t1);
        }
        if (!ok) {
            return reply(id, "not_acquired").put("t0", t0).put("t1", t1);
        }
        String lease = "L" + (++leaseSeq);
        leases.put(lease, key);
        held.put(key, before + 1);
        ObjectNode m = reply(id, "acquired").put("lease", lease).put("depth", lock.depth(rl, before));
        String token = lock.token(clients);
        if (token != null) {
            m.put("token", token);
        }
        return m.put("t0", t0).put("t1", t1);
    }

    ObjectNode release(long id, JsonNode req) {
        String lease = req.path("lease").asText();
        String key = leases.remove(lease);
        if (key == null) {
            return reply(id, "error").put("error", "unknown lease " + lease);
        }
        held.merge(key, -1, Integer::sum);
        if (held.get(key) <= 0) {
            held.remove(key);
        }
        RLock rl = lockFor(key);
        long t0 = System.nanoTime();
        try {
            rl.unlock();
        } catch (Throwable e) {
            return failure(id, e, t0, System.nanoTime());
        }
        long t1 = System.nanoTime();
        return reply(id, "released").put("t0", t0).put("t1", t1);
    }

    /** not_owner, indeterminate or error, from what Redisson threw (kept for a cancelled answer). */
    ObjectNode failure(long id, Throwable e, long t0, long t1) {
        callFailure = e;
        String type = classify(e);
        return reply(id, type).put("error", describe(e)).put("t0", t0).put("t1", t1);
    }

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
