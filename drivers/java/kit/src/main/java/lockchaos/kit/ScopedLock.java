package lockchaos.kit;

import java.util.List;

/**
 * A lock its application calls through an idiom with a scope (the protocol's API modes,
 * docs/driver-protocol.md): a try/finally around the critical section, a {@code withLock(key, () -> …)}
 * helper, a try-with-resources. Implement this instead of {@link DriverLock} and {@link Serve#serve}
 * runs each lease inside {@link #scope}, on a thread of its own as on an application's request
 * thread (the acquire, the critical section and the unlock on one thread; a re-entry of the key
 * nested in the scope on that thread), and its hello offers three things more:
 *
 * <ul>
 *   <li><b>API modes</b>: hello's {@code apis} are {@link #apis()}, {@code options} has {@code api},
 *       and init's {@code --lock-opt api=MODE} (else the first) is the {@code api} scope gets. An
 *       api not offered is refused at init, naming it. A lock file lists the same {@code apis:}.</li>
 *   <li><b>throw</b>: a release with {@code throw} leaves the scope by a {@link RuntimeException}
 *       with that message, thrown by {@code body.run} inside it; the idiom's finally unlocks. The
 *       answer is the release's, with {@code raised}: whether that exception came out of scope.</li>
 *   <li><b>sigterm</b>: on SIGTERM the JVM runs its shutdown hooks; the kit registers the one an
 *       application registers, {@link #onShutdown()} (its client's close), bounded to 5 s. The
 *       threads in a scope are halted where they are: their finally does not run.</li>
 * </ul>
 *
 * The lock file lists {@code extensions: [cancel, throw, sigterm]}.
 */
public interface ScopedLock extends DriverLock {
    /** The idioms scope can call, the default first (hello's apis, the lock option api). */
    List<String> apis();

    /**
     * Runs body inside the idiom api as the application writes it, and returns whether the lock
     * was won (false: body did not run). For example:
     *
     * <pre>{@code
     * String token = Serve.acquire(this, key, ttlMs, waitMs); // or the idiom's own wait, bounded by waitMs
     * if (token == null) return false;
     * try { body.run(token); } finally { release(key, token); }
     * return true;
     * }</pre>
     *
     * body.run answers acquired and returns when lockchaos releases the lease, or throws the
     * release's exception. What comes out of scope after body ran is the release's answer:
     * nothing, released; the release's own exception, released (raised); an exception the unlock
     * threw, not_owner when it is a refusal ({@link #isRefusal}, or an
     * IllegalMonitorStateException, Java's word for an unlock by a non-owner), else
     * indeterminate. Before body ran, an exception is the acquire's: not_acquired when a refusal,
     * else indeterminate.
     */
    boolean scope(String api, String key, long ttlMs, long waitMs, Body body) throws Exception;

    /** The application's critical section: it holds the lease whose token is given. */
    @FunctionalInterface
    interface Body {
        void run(String token) throws Exception;
    }

    /** The application's shutdown hook, run by the JVM on SIGTERM: by default {@link #close()}. */
    default void onShutdown() {
        close();
    }
}
