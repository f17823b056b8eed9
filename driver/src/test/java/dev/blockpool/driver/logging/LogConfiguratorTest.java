package dev.blockpool.driver.logging;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.blockpool.driver.logging.LogConfigurator.LogFormat;
import dev.blockpool.driver.logging.LogConfigurator.LogLevel;
import java.time.OffsetDateTime;
import java.util.Arrays;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/** Every line of the process, the driver's own and java.util.logging's, in the chosen format and level. */
class LogConfiguratorTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void textLineKeepsTheShapeOfBefore() {
        try (CapturedLog log = new CapturedLog(LogFormat.TEXT, LogLevel.INFO)) {
            LoggerFactory.getLogger("dev.blockpool.driver.server.UnixSocketServer")
                    .info("listening on {}", "unix:///csi/csi.sock");
            assertThat(log.lines())
                    .singleElement()
                    .asString()
                    .matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d) "
                            + "INFO UnixSocketServer - listening on unix:///csi/csi.sock");
        }
    }

    @Test
    void aNewlineInAQuotedValueCannotFakeALine() {
        try (CapturedLog log = new CapturedLog(LogFormat.TEXT, LogLevel.INFO)) {
            LoggerFactory.getLogger("rpc")
                    .info("CreateVolume [name={}] -> OK", "x\n2026-01-01T00:00:00.000Z ERROR fake\r\0");
            assertThat(log.lines())
                    .singleElement()
                    .asString()
                    .endsWith("rpc - CreateVolume [name=x\\n2026-01-01T00:00:00.000Z ERROR fake\\r\\x00] -> OK");
        }
    }

    @Test
    void jsonLineHasTimeLevelLoggerThreadMessageAndTheStackAsOneString() throws Exception {
        try (CapturedLog log = new CapturedLog(LogFormat.JSON, LogLevel.INFO)) {
            LoggerFactory.getLogger("dev.blockpool.pool.Pool")
                    .error(
                            "reconcile of \"{}\" failed",
                            "vol-1",
                            new IllegalStateException("disk\ngone", new java.io.IOException("EIO")));
            JsonNode line = JSON.readTree(log.lines().getFirst());
            assertThat(log.lines()).hasSize(1);
            assertThat(OffsetDateTime.parse(line.get("time").asText())
                            .getOffset()
                            .getTotalSeconds())
                    .isZero();
            assertThat(line.get("level").asText()).isEqualTo("ERROR");
            assertThat(line.get("logger").asText()).isEqualTo("dev.blockpool.pool.Pool");
            assertThat(line.get("thread").asText())
                    .isEqualTo(Thread.currentThread().getName());
            assertThat(line.get("message").asText()).isEqualTo("reconcile of \"vol-1\" failed");
            assertThat(line.get("stack_trace").asText())
                    .startsWith("java.lang.IllegalStateException: disk\ngone\n\tat ")
                    .contains("Caused by: java.io.IOException: EIO");
        }
    }

    @Test
    void stackTraceFollowsTheTextLine() {
        try (CapturedLog log = new CapturedLog(LogFormat.TEXT, LogLevel.INFO)) {
            java.util.logging.Logger.getLogger("io.grpc.internal.SerializingExecutor")
                    .log(Level.SEVERE, "Exception while executing runnable", new IllegalStateException("boom"));
            assertThat(log.lines().get(0)).endsWith(" ERROR SerializingExecutor - Exception while executing runnable");
            assertThat(log.lines().get(1)).isEqualTo("java.lang.IllegalStateException: boom");
            assertThat(log.lines().get(2)).startsWith("\tat ");
        }
    }

    /** Anyone who reaches the metrics port could otherwise write an error with a stack, again and again. */
    @Test
    void aMetricsClientThatLeavesBeforeItsAnswerWritesNothing() {
        try (CapturedLog log = new CapturedLog(LogFormat.TEXT, LogLevel.DEBUG)) {
            java.util.logging.Logger.getLogger("io.prometheus.metrics.exporter.httpserver.HttpExchangeAdapter")
                    .log(
                            Level.SEVERE,
                            "The Prometheus metrics HTTPServer caught an Exception while trying to send the metrics"
                                    + " response.",
                            new java.io.IOException("Broken pipe"));
            assertThat(log.text()).isEmpty();
        }
    }

    @Test
    void levelHidesWhatIsBelowIt() {
        try (CapturedLog log = new CapturedLog(LogFormat.TEXT, LogLevel.WARN)) {
            org.slf4j.Logger logger = LoggerFactory.getLogger(LogConfiguratorTest.class);
            logger.info("hidden");
            logger.warn("shown");
            assertThat(log.text()).doesNotContain("hidden").contains("WARN LogConfiguratorTest - shown");
        }
    }

    @Test
    void javaUtilLoggingComesOutAsOneJsonLine() throws Exception {
        try (CapturedLog log = new CapturedLog(LogFormat.JSON, LogLevel.INFO)) {
            java.util.logging.Logger grpc = java.util.logging.Logger.getLogger("io.grpc.internal.SerializingExecutor");
            grpc.log(Level.SEVERE, "Exception while executing runnable {0}", new Object[] {"task-1"});
            grpc.log(Level.WARNING, "transport failed", new RuntimeException("reset by peer"));
            assertThat(log.lines()).hasSize(2);
            JsonNode severe = JSON.readTree(log.lines().get(0));
            assertThat(severe.get("level").asText()).isEqualTo("ERROR");
            assertThat(severe.get("logger").asText()).isEqualTo("io.grpc.internal.SerializingExecutor");
            assertThat(severe.get("message").asText()).isEqualTo("Exception while executing runnable task-1");
            JsonNode warning = JSON.readTree(log.lines().get(1));
            assertThat(warning.get("level").asText()).isEqualTo("WARN");
            assertThat(warning.get("stack_trace").asText()).startsWith("java.lang.RuntimeException: reset by peer");
        }
    }

    /** The JDK's console handler would print its own two-line format beside the driver's. */
    @Test
    void javaUtilLoggingHasNoHandlerButTheBridge() {
        try (CapturedLog log = new CapturedLog(LogFormat.TEXT, LogLevel.INFO)) {
            assertThat(Arrays.asList(java.util.logging.Logger.getLogger("").getHandlers()))
                    .singleElement()
                    .isInstanceOf(SLF4JBridgeHandler.class);
            java.util.logging.Logger.getLogger("io.grpc.Context").severe("one line");
            assertThat(log.lines()).singleElement().asString().endsWith(" ERROR Context - one line");
        }
    }

    @Test
    void libraryInfoStaysOutUnlessDebugging() {
        java.util.logging.Logger grpc = java.util.logging.Logger.getLogger("io.grpc.netty.NettyServerHandler");
        org.slf4j.Logger netty =
                LoggerFactory.getLogger("io.grpc.netty.shaded.io.netty.channel.DefaultChannelPipeline");
        try (CapturedLog log = new CapturedLog(LogFormat.TEXT, LogLevel.INFO)) {
            grpc.info("routine grpc");
            netty.info("routine netty");
            grpc.warning("grpc warning");
            assertThat(log.text()).doesNotContain("routine").contains("WARN NettyServerHandler - grpc warning");
        }
        try (CapturedLog log = new CapturedLog(LogFormat.TEXT, LogLevel.DEBUG)) {
            grpc.info("grpc info");
            grpc.fine("grpc detail");
            java.util.logging.Logger.getLogger("dev.blockpool.driver.Driver").fine("driver detail");
            assertThat(log.text())
                    .contains("INFO NettyServerHandler - grpc info")
                    .doesNotContain("grpc detail")
                    .contains("DEBUG Driver - driver detail");
        }
    }
}
