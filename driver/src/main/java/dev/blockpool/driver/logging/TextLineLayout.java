package dev.blockpool.driver.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.LayoutBase;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;

/**
 * The text format, the shape slf4j-simple printed: time with its offset, level, the logger's
 * short name, message; a stack trace follows on its own lines. Written out rather than as a
 * logback PatternLayout, whose pattern compiler loads many more classes at start-up
 * (docs/performance-memory.md, "Where the memory goes").
 */
final class TextLineLayout extends LayoutBase<ILoggingEvent> {

    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").withZone(ZoneId.systemDefault());

    @Override
    public String doLayout(ILoggingEvent event) {
        String logger = event.getLoggerName();
        StringBuilder line = new StringBuilder(160)
                .append(TIME.format(event.getInstant()))
                .append(' ')
                .append(event.getLevel())
                .append(' ')
                .append(logger, logger.lastIndexOf('.') + 1, logger.length())
                .append(" - ");
        appendOneLine(line, event.getFormattedMessage());
        line.append('\n');
        IThrowableProxy thrown = event.getThrowableProxy();
        if (thrown != null) {
            line.append(ThrowableProxyUtil.asString(thrown));
        }
        return line.toString();
    }

    /**
     * A message is one line whatever it quotes: a request's name or path with a newline in it
     * must not start a line of its own that a reader would take for the driver's.
     */
    private static void appendOneLine(StringBuilder line, String message) {
        for (int i = 0; i < message.length(); i++) {
            char c = message.charAt(i);
            switch (c) {
                case '\n' -> line.append("\\n");
                case '\r' -> line.append("\\r");
                default -> {
                    if (c < 0x20 && c != '\t') {
                        line.append("\\x%02x".formatted((int) c));
                    } else {
                        line.append(c);
                    }
                }
            }
        }
    }
}
