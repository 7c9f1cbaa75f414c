package lockchaos.driver;

import com.fasterxml.jackson.databind.JsonNode;

import java.lang.reflect.Method;
import java.util.List;
import java.util.function.Function;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * {@code redisson}: RLock without a lease, renewed by the watchdog every lockWatchdogTimeout/3
 * (capabilities reentrant, renews; modes lock, try-lock, lock-interruptibly);
 * {@code redisson-lease}: RLock with a lease of ttl_ms and no renewal (reentrant; modes
 * lock-lease, try-lock-lease). One RedissonClient on
 * a single server, behind Sentinel or on a Cluster; on independent masters, the first.
 */
final class RLockDriver extends DriverLock {
    /** The client's id, the first part of the hash field its locks write (set at connect). */
    String clientId;

    RLockDriver(String name, boolean watchdog) {
        super(name, watchdog, watchdog ? List.of("reentrant", "renews") : List.of("reentrant"),
                watchdog ? Idioms.WATCHDOG : Idioms.LEASE);
    }

    @Override
    boolean multiNode() {
        return false;
    }

    @Override
    String refuses(String topology) {
        return null;
    }

    @Override
    void connect(String topology, JsonNode endpoints, Function<JsonNode, Config> single,
            Function<JsonNode, Config> asIs, List<RedissonClient> made) {
        // A one-node lock on independent masters runs on the first.
        Config c = topology.equals("independent") ? single.apply(endpoints.get(0)) : asIs.apply(endpoints.get(0));
        RedissonClient client = Redisson.create(c);
        made.add(client);
        clientId = clientId(client);
    }

    /**
     * The id RedissonLock puts before the thread id in its hash field: RedissonClient.getId()
     * where Redisson has it (3.16 on), else the connection manager's id (a UUID in 3.11), which is
     * what RedissonLock itself reads there.
     */
    static String clientId(RedissonClient client) {
        try {
            Method getId;
            try {
                getId = RedissonClient.class.getMethod("getId");
            } catch (NoSuchMethodException e) {
                Object cm = client.getClass().getMethod("getConnectionManager").invoke(client);
                return String.valueOf(Class.forName("org.redisson.connection.ConnectionManager")
                        .getMethod("getId").invoke(cm));
            }
            return String.valueOf(getId.invoke(client));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Redisson " + Main.redissonVersion() + ": no client id: " + e, e);
        }
    }

    @Override
    RLock lockFor(List<RedissonClient> clients, String key, long perMasterMs) {
        return clients.get(0).getLock(key);
    }

    @Override
    String token(List<RedissonClient> clients) {
        // The hash field Redisson stores: the client's id and the owning thread's id.
        return clientId + ":" + Thread.currentThread().getId();
    }

    @Override
    int depth(RLock lock, int before) {
        // The server's count of this thread's levels (an HGET after the call, outside t0..t1), on
        // every acquire, a first one too: a level the application never learned of (an acquire
        // that threw or timed out after its script ran) shows as a count above the driver's own.
        // A re-entry that found its key gone and took it afresh answers 1.
        try {
            int n = lock.getHoldCount();
            return n >= 1 ? n : before + 1;
        } catch (Throwable ignored) {
            return before + 1; // the driver's count
        }
    }
}
