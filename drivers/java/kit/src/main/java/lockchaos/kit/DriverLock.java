package lockchaos.kit;

import java.util.List;
import org.json.JSONObject;

/**
 * A team's lock as the kit serves it ({@link Serve#serve}): a few calls, each one of the lock's own.
 * The kit does the rest of the lock-client protocol (docs/driver-protocol.md): the stdin thread that
 * answers ping and clock at once, one worker thread for the calls (a lock that belongs to a thread,
 * as a reentrant one does, sees the same thread for every call), times around each call, leases
 * kept until a definite answer, retries of a refused acquire until wait_ms, and an indeterminate
 * outcome for any exception that is not a refusal.
 *
 * <p>A cancel (the protocol's cancel extension, which the kit's hello lists) interrupts the worker
 * thread in the call ({@link Thread#interrupt()}), or has the call start with the thread
 * interrupted: a call that heeds interrupts throws (the request answers "cancelled"); one that
 * does not (a blocking socket read) returns, and its answer is the usual one.
 */
public interface DriverLock {
    /** hello's fields: the lock's name, library and version, its capabilities and reports. */
    record Hello(String name, String library, String version, List<String> capabilities, List<String> reports) {
        public Hello(String name, String library, String version) {
            this(name, library, version, List.of(), List.of());
        }
    }

    Hello hello();

    /** Connects: init's endpoints, conn_name (name every connection) and options (command_timeout_ms). */
    void init(JSONObject init) throws Exception;

    /** One attempt at key with a lease of ttlMs: the hold's token (what the server holds), or null when refused. */
    String acquire(String key, long ttlMs) throws Exception;

    /** Releases the hold of token on key: true released, false not the owner. */
    boolean release(String key, String token) throws Exception;

    /** An exception that means the server said no (a refusal, not an unknown outcome). */
    default boolean isRefusal(Exception e) {
        return false;
    }

    /** On shutdown. */
    default void close() {}
}
