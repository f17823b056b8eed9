package dev.blockpool.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.driver.LogConfigurator.LogLevel;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/** Every line of the process, the driver's own and java.util.logging's, in one format and at the chosen level. */
class LogConfiguratorTest {

    @Test
    void textLineKeepsTheShapeOfBefore() {
        try (CapturedLog log = new CapturedLog(LogLevel.INFO)) {
            LoggerFactory.getLogger(UnixSocketServer.class).info("listening on {}", "unix:///csi/csi.sock");
            assertThat(log.lines()).singleElement().asString()
                    .matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d) "
                            + "INFO UnixSocketServer - listening on unix:///csi/csi.sock");
        }
    }

    @Test
    void stackTraceFollowsTheTextLine() {
        try (CapturedLog log = new CapturedLog(LogLevel.INFO)) {
            java.util.logging.Logger.getLogger("io.grpc.internal.SerializingExecutor").log(
                    java.util.logging.Level.SEVERE, "Exception while executing runnable", new IllegalStateException("boom"));
            assertThat(log.lines().get(0)).endsWith(" ERROR SerializingExecutor - Exception while executing runnable");
            assertThat(log.lines().get(1)).isEqualTo("java.lang.IllegalStateException: boom");
            assertThat(log.lines().get(2)).startsWith("\tat ");
        }
    }

    @Test
    void levelHidesWhatIsBelowIt() {
        try (CapturedLog log = new CapturedLog(LogLevel.WARN)) {
            org.slf4j.Logger logger = LoggerFactory.getLogger(LogConfiguratorTest.class);
            logger.info("hidden");
            logger.warn("shown");
            assertThat(log.text()).doesNotContain("hidden").contains("WARN LogConfiguratorTest - shown");
        }
    }

    /** The JDK's console handler would print its own two-line format beside the driver's. */
    @Test
    void javaUtilLoggingHasNoHandlerButTheBridge() {
        try (CapturedLog log = new CapturedLog(LogLevel.INFO)) {
            assertThat(Arrays.asList(java.util.logging.Logger.getLogger("").getHandlers()))
                    .singleElement().isInstanceOf(SLF4JBridgeHandler.class);
            java.util.logging.Logger.getLogger("io.grpc.Context").severe("one line");
            assertThat(log.lines()).singleElement().asString().endsWith(" ERROR Context - one line");
        }
    }

    @Test
    void libraryInfoStaysOutUnlessDebugging() {
        java.util.logging.Logger grpc = java.util.logging.Logger.getLogger("io.grpc.netty.NettyServerHandler");
        org.slf4j.Logger netty = LoggerFactory.getLogger("io.grpc.netty.shaded.io.netty.channel.DefaultChannelPipeline");
        try (CapturedLog log = new CapturedLog(LogLevel.INFO)) {
            grpc.info("routine grpc");
            netty.info("routine netty");
            grpc.warning("grpc warning");
            assertThat(log.text()).doesNotContain("routine").contains("WARN NettyServerHandler - grpc warning");
        }
        try (CapturedLog log = new CapturedLog(LogLevel.DEBUG)) {
            grpc.info("grpc info");
            grpc.fine("grpc detail");
            java.util.logging.Logger.getLogger("dev.blockpool.driver.Driver").fine("driver detail");
            assertThat(log.text()).contains("INFO NettyServerHandler - grpc info").doesNotContain("grpc detail")
                    .contains("DEBUG Driver - driver detail");
        }
    }
}
