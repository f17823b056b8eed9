/**
 * Serving the CSI services on the Unix socket ({@link dev.blockpool.driver.server.UnixSocketServer}):
 * where each call runs, in place or on a thread of its own under a ceiling
 * ({@link dev.blockpool.driver.server.CallPlacement}, {@link dev.blockpool.driver.server.CallThreads}),
 * the answer every call gets by its deadline ({@link dev.blockpool.driver.server.CallDeadlines}),
 * its one log line with secrets masked ({@link dev.blockpool.driver.server.CallLoggingInterceptor}),
 * INVALID_ARGUMENT for a request that does not parse
 * ({@link dev.blockpool.driver.server.MalformedRequestGuard}), and the heap given back once calls
 * stop ({@link dev.blockpool.driver.server.IdleMemoryRelease}). It knows calls, not what they
 * do: the composition root hands it the services and its interceptors.
 */
package dev.blockpool.driver.server;
