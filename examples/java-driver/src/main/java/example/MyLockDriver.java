package example;

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.*;
import java.util.concurrent.*;
import org.json.JSONObject;
import redis.clients.jedis.*;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.params.SetParams;

/** A team's own Redis lock (SET NX PX, a Lua compare-and-delete) speaking lockchaos' driver protocol. */
public class MyLockDriver {
    static final String DEL = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    static final PrintStream OUT = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    static final ExecutorService WORKER = Executors.newSingleThreadExecutor(); // Jedis is used on this thread only
    static Jedis jedis;
    static HostAndPort addr;
    static JedisClientConfig conf;
    static final Map<String, String[]> leases = new HashMap<>(); // lease -> {key, token}
    static long retryMs = 10, seq;

    public static void main(String[] args) throws Exception {
        System.setOut(System.err); // stdout is for protocol lines only
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            JSONObject req = new JSONObject(line);
            long id = req.getLong("id");
            switch (req.getString("type")) {
                case "ping" -> { long t0 = System.nanoTime(); send(reply(id, "pong").put("t0", t0).put("t1", System.nanoTime())); }
                case "clock" -> { Instant now = Instant.now();
                    send(reply(id, "clock_ok").put("mono_ns", System.nanoTime()).put("wall_ns", now.getEpochSecond() * 1_000_000_000L + now.getNano())); }
                case "shutdown" -> { send(reply(id, "shutdown_ok")); System.exit(0); }
                default -> WORKER.submit(() -> { // lock calls may block: never on the stdin thread
                    try { send(handle(id, req)); } catch (Exception e) { send(reply(id, "error").put("error", e.toString())); }
                });
            }
        }
        System.exit(0);
    }

    static JSONObject handle(long id, JSONObject req) {
        switch (req.getString("type")) {
            case "hello": return reply(id, "hello_ok").put("protocol", 1).put("name", "my-jedis-lock").put("library", "example:my-jedis-lock")
                    .put("version", "1").put("language", "java").put("capabilities", List.of()).put("reports", List.of("deadline")).put("options", List.of());
            case "init": {
                JSONObject o = req.getJSONObject("options");
                String[] hp = req.getJSONArray("endpoints").getJSONObject(0).getString("addr").split(":(?=\\d+$)");
                int timeout = o.optInt("command_timeout_ms", 250);
                retryMs = Math.max(1, o.optLong("retry_delay_ms", 10));
                addr = new HostAndPort(hp[0], Integer.parseInt(hp[1]));
                conf = DefaultJedisClientConfig.builder().clientName(req.getString("conn_name"))
                        .socketTimeoutMillis(timeout).connectionTimeoutMillis(Math.max(timeout, 1000)).build();
                long t0 = System.nanoTime();
                jedis = new Jedis(addr, conf);
                jedis.ping();
                return reply(id, "init_ok").put("t0", t0).put("t1", System.nanoTime());
            }
            case "acquire": {
                String key = req.getString("key"), token = UUID.randomUUID().toString();
                long ttl = req.getLong("ttl_ms"), t0 = System.nanoTime(), until = t0 + req.optLong("wait_ms", 0) * 1_000_000;
                try {
                    while (!"OK".equals(jedis.set(key, token, SetParams.setParams().nx().px(ttl)))) {
                        if (System.nanoTime() + retryMs * 1_000_000 > until) return reply(id, "not_acquired").put("t0", t0).put("t1", System.nanoTime());
                        Thread.sleep(retryMs);
                    }
                } catch (Exception e) { return failed(id, e, t0); }
                String lease = "L" + (++seq);
                leases.put(lease, new String[] {key, token});
                return reply(id, "acquired").put("lease", lease).put("token", token).put("depth", 1)
                        .put("deadline_ns", t0 + ttl * 1_000_000).put("t0", t0).put("t1", System.nanoTime());
            }
            case "release": {
                String[] l = leases.remove(req.getString("lease"));
                long t0 = System.nanoTime();
                try {
                    Object n = jedis.eval(DEL, List.of(l[0]), List.of(l[1]));
                    return reply(id, Long.valueOf(1).equals(n) ? "released" : "not_owner").put("t0", t0).put("t1", System.nanoTime());
                } catch (Exception e) { return failed(id, e, t0); }
            }
            default: return reply(id, "error").put("error", "unsupported");
        }
    }

    /** A timeout or a broken connection: the outcome at the server is unknown. */
    static JSONObject failed(long id, Exception e, long t0) {
        JSONObject m = reply(id, e instanceof JedisConnectionException ? "indeterminate" : "error").put("error", e.toString());
        jedis.close();
        jedis = new Jedis(addr, conf); // connects (and names itself) on its next command
        return m.put("t0", t0).put("t1", System.nanoTime());
    }

    static JSONObject reply(long id, String type) { return new JSONObject().put("in_reply_to", id).put("type", type); }

    static synchronized void send(JSONObject m) { OUT.println(m); }
}
