package dev.blockpool.driver.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.jul.LevelChangePropagator;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.LayoutBase;
import ch.qos.logback.core.encoder.LayoutWrappingEncoder;
import ch.qos.logback.core.spi.ContextAwareBase;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * The one place that configures logging, in code: logback reads no configuration file. Every
 * line goes to stderr in the chosen format, including what grpc-java and the JDK log through
 * java.util.logging. logback finds this class as a service and runs it before the first logger
 * exists (text at info); {@link #apply} then sets what the command line asks for.
 */
public final class LogConfigurator extends ContextAwareBase implements Configurator {

    public enum LogLevel {
        ERROR(Level.ERROR),
        WARN(Level.WARN),
        INFO(Level.INFO),
        DEBUG(Level.DEBUG);

        final Level level;

        LogLevel(Level level) {
            this.level = level;
        }
    }

    public enum LogFormat {
        TEXT,
        JSON
    }

    /** grpc-java with its shaded Netty, and the JDK (which logs e.g. every Runtime.exit at debug, with a stack). */
    private static final List<String> LIBRARIES = List.of("io.grpc", "java", "javax", "jdk", "sun");
    /** Warns of channel options a Unix socket lacks on every connection (SO_KEEPALIVE): nothing to act on. */
    private static final String SERVER_BOOTSTRAP = "io.grpc.netty.shaded.io.netty.bootstrap.ServerBootstrap";
    /**
     * Logs an error with a stack whenever a client of the metrics port leaves before its answer is
     * written: the client's doing, nothing to act on, and a way for anyone on the network to fill
     * the driver's log.
     */
    private static final String METRICS_EXCHANGE = "io.prometheus.metrics.exporter.httpserver.HttpExchangeAdapter";

    @Override
    public ExecutionStatus configure(LoggerContext context) {
        configure(context, LogFormat.TEXT, LogLevel.INFO);
        return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
    }

    /** Replaces whatever configuration there was: {@code level} for the driver, less for the libraries. */
    public static void apply(LogFormat format, LogLevel level) {
        configure((LoggerContext) LoggerFactory.getILoggerFactory(), format, level);
    }

    private static void configure(LoggerContext context, LogFormat format, LogLevel level) {
        context.reset();
        // Mirrors each level onto java.util.logging, so that records below it are not even built.
        LevelChangePropagator julLevels = new LevelChangePropagator();
        julLevels.setContext(context);
        julLevels.setResetJUL(true);
        julLevels.start();
        context.addListener(julLevels);

        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.addAppender(stderr(context, format));
        root.setLevel(level.level);
        for (String library : LIBRARIES) {
            context.getLogger(library).setLevel(libraryLevel(level));
        }
        context.getLogger(SERVER_BOOTSTRAP).setLevel(Level.ERROR);
        context.getLogger(METRICS_EXCHANGE).setLevel(Level.OFF);

        // Replaces the JDK's console handler and its two-line format.
        SLF4JBridgeHandler.removeHandlersForRootLogger();
        SLF4JBridgeHandler.install();
    }

    /** The libraries say at info what only matters when debugging them; the driver's debug is about its calls. */
    private static Level libraryLevel(LogLevel level) {
        return switch (level) {
            case ERROR -> Level.ERROR;
            case WARN, INFO -> Level.WARN;
            case DEBUG -> Level.INFO;
        };
    }

    private static ConsoleAppender<ILoggingEvent> stderr(LoggerContext context, LogFormat format) {
        LayoutBase<ILoggingEvent> layout = format == LogFormat.JSON ? new JsonLineLayout() : new TextLineLayout();
        layout.setContext(context);
        layout.start();
        LayoutWrappingEncoder<ILoggingEvent> encoder = new LayoutWrappingEncoder<>();
        encoder.setContext(context);
        encoder.setLayout(layout);
        encoder.setCharset(StandardCharsets.UTF_8);
        encoder.start();
        // Writes to whatever System.err is at the time, and never closes it on a reset.
        ConsoleAppender<ILoggingEvent> appender = new ConsoleAppender<>();
        appender.setContext(context);
        appender.setName("stderr");
        appender.setTarget("System.err");
        appender.setEncoder(encoder);
        appender.start();
        return appender;
    }
}
