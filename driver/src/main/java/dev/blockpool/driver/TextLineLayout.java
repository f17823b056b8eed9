package dev.blockpool.driver;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.LayoutBase;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;

/**
 * The text format, the shape slf4j-simple printed: time with its offset, level, the logger's
 * short name, message; a stack trace follows on its own lines. Written out rather than as a
 * logback PatternLayout, whose pattern compiler loads about 150 more classes at start-up.
 */
final class TextLineLayout extends LayoutBase<ILoggingEvent> {

    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").withZone(ZoneId.systemDefault());

    @Override
    public String doLayout(ILoggingEvent event) {
        String logger = event.getLoggerName();
        StringBuilder line = new StringBuilder(160)
                .append(TIME.format(event.getInstant())).append(' ')
                .append(event.getLevel()).append(' ')
                .append(logger, logger.lastIndexOf('.') + 1, logger.length()).append(" - ")
                .append(event.getFormattedMessage()).append('\n');
        IThrowableProxy thrown = event.getThrowableProxy();
        if (thrown != null) {
            line.append(ThrowableProxyUtil.asString(thrown));
        }
        return line.toString();
    }
}
