/**
 * The driver's logging, configured in code rather than from a file: every line, grpc-java's and
 * the JDK's too, goes to stderr as text ({@link dev.blockpool.driver.logging.TextLineLayout}) or
 * one JSON object ({@link dev.blockpool.driver.logging.JsonLineLayout}), at the level the command
 * line asks for ({@link dev.blockpool.driver.logging.LogConfigurator}, which logback also finds
 * as a service before the first logger exists).
 */
package dev.blockpool.driver.logging;
