package lockchaos.driver;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.List;
import java.util.function.Function;

import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * One of the driver's locks ({@code --lock NAME}): the Redisson clients it connects, the RLock it
 * takes for a key, and what it tells lockchaos in hello. Each lock is a file of its own:
 * {@link RLockDriver} (one RedissonClient's RLock) and {@link MultiLockDriver} (RedissonRedLock and
 * RedissonMultiLock over one client per independent master). Main speaks the protocol for all of
 * them.
 */
abstract class DriverLock {
    final String name;
    /** No lease: Redisson's watchdog renews the lock every lockWatchdogTimeout/3. */
    final boolean watchdog;
    final List<String> capabilities;
    /** Its API modes (Idioms, the lock option api), the default first: hello's apis. */
    final List<String> apis;

    DriverLock(String name, boolean watchdog, List<String> capabilities, List<String> apis) {
        this.name = name;
        this.watchdog = watchdog;
        this.capabilities = capabilities;
        this.apis = apis;
    }

    static final String NAMES = "redisson, redisson-lease, redisson-redlock, redisson-redlock-watchdog, redisson-multilock";

    static DriverLock of(String name) {
        switch (name) {
            case "redisson": return new RLockDriver(name, true);
            case "redisson-lease": return new RLockDriver(name, false);
            case "redisson-redlock": return new MultiLockDriver(name, false, true);
            case "redisson-redlock-watchdog": return new MultiLockDriver(name, true, true);
            case "redisson-multilock": return new MultiLockDriver(name, false, false);
            default: throw new IllegalArgumentException("unknown lock " + name + " (" + NAMES + ")");
        }
    }

    /** Over more than one master (a retry=driver acquire and master_timeout_ms apply). */
    abstract boolean multiNode();

    /** Why the lock cannot run on topology, or null. */
    abstract String refuses(String topology);

    /**
     * The lock's clients for the init's endpoints, each made from its endpoint's config (a
     * single-server config for each independent master); clients made before a failure are added
     * to made, for the caller to shut down.
     */
    abstract void connect(String topology, JsonNode endpoints, Function<JsonNode, Config> single,
            Function<JsonNode, Config> asIs, List<RedissonClient> made) throws Throwable;

    /** A new RLock for key over the clients (perMasterMs: each master's lock's timeout, 0 none). */
    abstract RLock lockFor(List<RedissonClient> clients, String key, long perMasterMs);

    /** The owner field lockchaos sees at the server (the acquired reply's token), or null. */
    abstract String token(List<RedissonClient> clients);

    /**
     * The hold's depth after an acquire: the driver's count of the key's unreleased leases, or
     * what the server says on a re-entry where it can tell (a re-entry, or a fresh hold after an
     * earlier one expired).
     */
    abstract int depth(RLock lock, int before);
}
