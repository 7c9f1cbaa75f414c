package lockchaos.driver;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.List;
import java.util.function.Function;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * {@code redisson}: RLock.tryLock(wait) without a lease, renewed by the watchdog every
 * lockWatchdogTimeout/3 (capabilities reentrant, renews); {@code redisson-lease}:
 * RLock.tryLock(wait, ttl_ms), an explicit lease and no renewal (reentrant). One RedissonClient on
 * a single server, behind Sentinel or on a Cluster; on independent masters, the first.
 */
final class RLockDriver extends DriverLock {
    RLockDriver(String name, boolean watchdog) {
        super(name, watchdog, watchdog ? List.of("reentrant", "renews") : List.of("reentrant"));
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
        made.add(Redisson.create(c));
    }

    @Override
    RLock lockFor(List<RedissonClient> clients, String key, long perMasterMs) {
        return clients.get(0).getLock(key);
    }

    @Override
    String token(List<RedissonClient> clients) {
        // The hash field Redisson stores: the client's id and the owning thread's id.
        return clients.get(0).getId() + ":" + Thread.currentThread().getId();
    }

    @Override
    int depth(RLock lock, int before) {
        if (before == 0) {
            return 1;
        }
        // A re-entry, or a fresh hold after an earlier one expired: the server's count says which
        // (an HGET after the call, outside t0..t1).
        try {
            return lock.getHoldCount();
        } catch (Throwable ignored) {
            return before + 1; // the driver's count
        }
    }
}
