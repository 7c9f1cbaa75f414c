package lockchaos.driver;

import com.fasterxml.jackson.databind.JsonNode;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;

import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * {@code redisson-redlock}: RedissonRedLock over one RedissonClient per independent master, with
 * the lease ttl_ms (multi-node, reentrant); {@code redisson-redlock-watchdog} the same without a
 * lease (renews); {@code redisson-multilock}: RedissonMultiLock (every master) with the lease. On
 * one server, a lock of one master, as the built-in redlock runs on a single node. Modes lock
 * (lock(lease, unit), or lock() without a lease) and try-lock.
 */
final class MultiLockDriver extends DriverLock {
    /** RedissonRedLock (a majority), else RedissonMultiLock (all). */
    final boolean redlock;

    final ExecutorService connector = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "lockchaos-connect");
        t.setDaemon(true);
        return t;
    });

    /**
     * RedissonClient.getLock(CommonOptions.name(key).timeout(t)): a lock whose own commands time
     * out after t (master_timeout_ms), or null where this Redisson has no
     * org.redisson.api.options.CommonOptions (none of 3.11 to 3.16 has), which Main then refuses
     * the option on.
     */
    static final MethodHandle TIMED_LOCK = timedLock();

    static MethodHandle timedLock() {
        try {
            MethodHandles.Lookup l = MethodHandles.publicLookup();
            Class<?> options = Class.forName("org.redisson.api.options.CommonOptions");
            MethodHandle named = l.findStatic(options, "name", MethodType.methodType(options, String.class));
            Class<?> invocation = Class.forName("org.redisson.api.options.InvocationOptions");
            MethodHandle timeout = l.findVirtual(invocation, "timeout", MethodType.methodType(invocation, Duration.class));
            MethodHandle getLock = l.findVirtual(RedissonClient.class, "getLock", MethodType.methodType(RLock.class, options));
            // (client, key, duration) -> client.getLock((CommonOptions) CommonOptions.name(key).timeout(duration))
            named = named.asType(MethodType.methodType(invocation, String.class));
            MethodHandle opts = MethodHandles.filterArguments(timeout, 0, named); // (String, Duration) -> InvocationOptions
            opts = opts.asType(MethodType.methodType(options, String.class, Duration.class));
            return MethodHandles.collectArguments(getLock, 1, opts); // (RedissonClient, String, Duration) -> RLock
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    MultiLockDriver(String name, boolean watchdog, boolean redlock) {
        super(name, watchdog, watchdog ? List.of("multi-node", "reentrant", "renews") : List.of("multi-node", "reentrant"),
                Idioms.MULTI);
        this.redlock = redlock;
    }

    @Override
    boolean multiNode() {
        return true;
    }

    @Override
    String refuses(String topology) {
        // Behind Sentinel or in a Cluster the masters are not independent.
        if (topology.equals("independent") || topology.equals("single")) {
            return null;
        }
        return name + " needs independent masters or one server, not " + topology;
    }

    @Override
    void connect(String topology, JsonNode endpoints, Function<JsonNode, Config> single,
            Function<JsonNode, Config> asIs, List<RedissonClient> made) throws Throwable {
        if (!topology.equals("independent")) {
            made.add(Redisson.create(asIs.apply(endpoints.get(0))));
            return;
        }
        // One client per master, connected side by side (in the masters' order).
        List<CompletableFuture<RedissonClient>> each = new ArrayList<>();
        for (JsonNode ep : endpoints) {
            Config c = single.apply(ep);
            each.add(CompletableFuture.supplyAsync(() -> Redisson.create(c), connector));
        }
        CompletableFuture.allOf(each.toArray(new CompletableFuture<?>[0])).handle((v, e) -> null).join();
        Throwable first = null;
        for (CompletableFuture<RedissonClient> f : each) {
            try {
                made.add(f.join()); // every client made is shut down by the caller if one failed
            } catch (Throwable e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    RLock lockFor(List<RedissonClient> clients, String key, long perMasterMs) {
        RLock[] each = new RLock[clients.size()];
        for (int i = 0; i < each.length; i++) {
            each[i] = perMasterMs > 0 ? timedLock(clients.get(i), key, perMasterMs) : clients.get(i).getLock(key);
        }
        return redlock ? new RedissonRedLock(each) : new RedissonMultiLock(each);
    }

    static RLock timedLock(RedissonClient client, String key, long ms) {
        if (TIMED_LOCK == null) {
            throw new IllegalStateException("master_timeout_ms: Redisson " + Main.redissonVersion()
                    + " has no per-lock timeout (org.redisson.api.options.CommonOptions)");
        }
        try {
            return (RLock) TIMED_LOCK.invoke(client, key, Duration.ofMillis(ms));
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    String token(List<RedissonClient> clients) {
        return null; // one field per master's client: no one token
    }

    @Override
    int depth(RLock lock, int before) {
        return before + 1; // a RedissonMultiLock has no hold count of its own
    }
}
