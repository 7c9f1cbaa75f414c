package lockchaos.driver;

import com.fasterxml.jackson.databind.JsonNode;

import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Map;

import org.redisson.client.codec.StringCodec;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;
import org.redisson.config.SentinelServersConfig;
import org.redisson.config.SubscriptionMode;

/**
 * Redisson's configuration from an init request: every lock's clients are made from it. Built
 * against the pinned Redisson and older ones (scripts/drivers-java.sh VERSION): the settings
 * common to every server config are BaseConfig's, a package-private class in 3.11, so they are
 * set by name ({@link #set}); Sentinel's checkSentinelsList (not in 3.11) and sentinelsDiscovery
 * (not in 3.16) likewise, where this Redisson has them.
 */
final class RedissonConfig {
    private RedissonConfig() {}

    /** Redisson's configuration for one endpoint, dialling only the addresses given. */
    static Config config(String topology, JsonNode ep, String connName, JsonNode opts) {
        JsonNode extra = opts.path("extra");
        Config c = new Config();
        // The watchdog's lease (renewed every third of it): the option, else the scenario's ttl.
        long wd = extra.has("watchdog_timeout_ms") ? extra.path("watchdog_timeout_ms").asLong()
                : opts.path("ttl_ms").asLong(0);
        if (wd > 0) {
            c.setLockWatchdogTimeout(wd);
        }
        // A lock needs no object codec; StringCodec spares Kryo's start-up.
        c.setCodec(StringCodec.INSTANCE);
        c.setThreads(2);
        c.setNettyThreads(2);
        Object b; // a BaseConfig, by reflection (package-private up to Redisson 3.11)
        switch (topology) {
            case "single": {
                b = c.useSingleServer().setAddress(uri(ep.path("addr").asText()))
                        .setConnectionMinimumIdleSize(1).setConnectionPoolSize(4)
                        .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(2);
                break;
            }
            case "sentinel": {
                SentinelServersConfig s = c.useSentinelServers().setMasterName(ep.path("master_name").asText())
                        .setReadMode(ReadMode.MASTER).setSubscriptionMode(SubscriptionMode.MASTER)
                        .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(4)
                        .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(2);
                // Only the sentinels given: no check that the sentinels know of two or more, no
                // discovery of the ones they announce. Redisson 3.11 has no such check; 3.16 and
                // older always add the sentinels announced (through addr_map, where given).
                setIfPresent(s, "setCheckSentinelsList", boolean.class, false);
                if (!setIfPresent(s, "setSentinelsDiscovery", boolean.class, false)) {
                    System.err.println("lockchaos driver: Redisson " + Main.redissonVersion()
                            + " has no setSentinelsDiscovery: it also dials the sentinels the sentinels announce");
                }
                for (JsonNode a : ep.path("sentinels")) {
                    s.addSentinelAddress(uri(a.asText()));
                }
                natMap(ep, s);
                b = s;
                break;
            }
            case "cluster": {
                ClusterServersConfig s = c.useClusterServers()
                        .setReadMode(ReadMode.MASTER).setSubscriptionMode(SubscriptionMode.MASTER)
                        .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(4)
                        .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(2);
                JsonNode nodes = ep.path("cluster");
                if (nodes.isArray() && nodes.size() > 0) {
                    for (JsonNode a : nodes) {
                        s.addNodeAddress(uri(a.asText()));
                    }
                } else {
                    s.addNodeAddress(uri(ep.path("addr").asText()));
                }
                natMap(ep, s);
                b = s;
                break;
            }
            default:
                throw new IllegalArgumentException("unknown topology " + topology);
        }
        if (!connName.isEmpty()) {
            set(b, "setClientName", String.class, connName);
        }
        if (ep.hasNonNull("password")) {
            set(b, "setPassword", String.class, ep.path("password").asText());
        }
        long cmd = opts.path("command_timeout_ms").asLong(0);
        if (cmd > 0) {
            set(b, "setTimeout", int.class, (int) cmd);
            set(b, "setConnectTimeout", int.class, (int) Math.max(cmd, 1000));
        }
        // Redisson retries a command that timed out (3 times, 1.5 s apart, by default). Here it does
        // not unless asked: an outcome then comes within command_timeout_ms, and a timeout is an
        // indeterminate reply rather than a silent re-send.
        set(b, "setRetryAttempts", int.class, extra.path("retry_attempts").asInt(0));
        long retryDelay = opts.path("retry_delay_ms").asLong(0);
        if (retryDelay > 0) {
            set(b, "setRetryInterval", int.class, (int) retryDelay);
        }
        return c;
    }

    /** A public setter of the server config, by name (every Redisson version has it). */
    static void set(Object config, String setter, Class<?> type, Object value) {
        if (!setIfPresent(config, setter, type, value)) {
            throw new IllegalStateException("Redisson " + Main.redissonVersion() + " has no "
                    + config.getClass().getSimpleName() + "." + setter + "(" + type.getSimpleName() + ")");
        }
    }

    /** The same, false when this Redisson has no such setter. */
    static boolean setIfPresent(Object config, String setter, Class<?> type, Object value) {
        Method m;
        try {
            m = config.getClass().getMethod(setter, type);
        } catch (NoSuchMethodException e) {
            return false;
        }
        try {
            // Declared by BaseConfig, package-private in 3.11: a public method of it is not
            // reachable by reflection without this.
            m.setAccessible(true);
            m.invoke(config, value);
            return true;
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw new IllegalArgumentException(setter + ": " + e.getCause(), e.getCause());
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException(setter + ": " + e, e);
        }
    }

    static String uri(String addr) {
        return addr.contains("://") ? addr : "redis://" + addr;
    }

    /**
     * An endpoint's optional {@code addr_map} (docs/driver-protocol.md: announced address to
     * the client's proxy), for Sentinel and Cluster, which announce the servers' own addresses.
     */
    static void natMap(JsonNode ep, Object serversConfig) {
        JsonNode nat = ep.path("addr_map");
        if (!nat.isObject() || nat.size() == 0) {
            return;
        }
        Map<String, String> m = new HashMap<>();
        nat.fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
        // HostPortNatMapper is in org.redisson.api up to 3.x and in org.redisson.config from 4.0.
        Exception last = null;
        for (String pkg : new String[] {"org.redisson.config.", "org.redisson.api."}) {
            try {
                Class<?> mapperClass = Class.forName(pkg + "HostPortNatMapper");
                Object mapper = mapperClass.getConstructor().newInstance();
                mapperClass.getMethod("setHostsPortMap", Map.class).invoke(mapper, m);
                Class<?> iface = Class.forName(pkg + "NatMapper");
                serversConfig.getClass().getMethod("setNatMapper", iface).invoke(serversConfig, mapper);
                return;
            } catch (ReflectiveOperationException e) {
                last = e;
            }
        }
        throw new IllegalStateException("this Redisson has no HostPortNatMapper", last);
    }
}
