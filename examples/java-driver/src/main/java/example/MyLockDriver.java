package example;

import java.util.List;
import java.util.UUID;
import lockchaos.kit.Serve;
import lockchaos.kit.ScopedLock;
import org.json.JSONObject;
import redis.clients.jedis.*;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.params.SetParams;

/**
 * A team's own Redis lock (SET NX PX, a Lua compare-and-delete) as a lockchaos driver, on the Java driver kit. It is a
 * ScopedLock: the kit runs each lease inside the team's idiom (scope), so lockchaos's API modes, throw and sigterm reach it.
 */
public class MyLockDriver implements ScopedLock {
    static final String DEL = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    HostAndPort addr;
    JedisClientConfig conf;
    Jedis jedis; // the kit makes one call at a time

    public static void main(String[] args) throws Exception { Serve.serve(new MyLockDriver()); }

    public Hello hello() { return new Hello("my-jedis-lock", "example:my-jedis-lock", "1"); }

    public void init(JSONObject req) {
        String[] hp = req.getJSONArray("endpoints").getJSONObject(0).getString("addr").split(":(?=\\d+$)");
        int timeout = req.getJSONObject("options").optInt("command_timeout_ms", 250);
        addr = new HostAndPort(hp[0], Integer.parseInt(hp[1]));
        conf = DefaultJedisClientConfig.builder().clientName(req.getString("conn_name"))
                .socketTimeoutMillis(timeout).connectionTimeoutMillis(Math.max(timeout, 1000)).build();
        jedis = new Jedis(addr, conf);
        jedis.ping();
    }

    public String acquire(String key, long ttlMs) {
        String token = UUID.randomUUID().toString();
        return "OK".equals(call(() -> jedis.set(key, token, SetParams.setParams().nx().px(ttlMs)))) ? token : null;
    }

    public boolean release(String key, String token) { return Long.valueOf(1).equals(call(() -> jedis.eval(DEL, List.of(key), List.of(token)))); }

    public List<String> apis() { return List.of("with-lock"); }

    /** The team's idiom, withLock(key, ttl, wait, body): the wait by the kit's retries, the unlock in a finally. */
    public boolean scope(String api, String key, long ttlMs, long waitMs, Body body) throws Exception {
        String token = Serve.acquire(this, key, ttlMs, waitMs);
        if (token == null) return false;
        try { body.run(token); } finally { if (!release(key, token)) throw new IllegalMonitorStateException("not the owner of " + key); }
        return true;
    }

    public void close() { jedis.close(); }

    /** A broken connection (a timeout among them): a new one for the next call, and the kit says indeterminate. */
    <T> T call(java.util.function.Supplier<T> c) {
        try {
            return c.get();
        } catch (JedisConnectionException e) {
            jedis.close();
            jedis = new Jedis(addr, conf); // connects (and names itself) on its next command
            throw e;
        }
    }
}
