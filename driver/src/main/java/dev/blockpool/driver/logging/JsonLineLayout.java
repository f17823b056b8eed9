package dev.blockpool.driver.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.LayoutBase;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * One JSON object per line, for clusters that ship logs to a collector: time (UTC, RFC 3339),
 * level, logger, thread, message and, when there is one, the exception's whole stack trace as one
 * string. Not logback's JsonEncoder: its message field is the pattern apart from its arguments,
 * its time epoch milliseconds, and its stack trace nested objects, one per frame.
 */
final class JsonLineLayout extends LayoutBase<ILoggingEvent> {

    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").withZone(ZoneOffset.UTC);
    private static final JsonStringEncoder QUOTE = JsonStringEncoder.getInstance();

    @Override
    public String doLayout(ILoggingEvent event) {
        StringBuilder line = new StringBuilder(256).append('{');
        field(line, "time", TIME.format(event.getInstant())).append(',');
        field(line, "level", event.getLevel().toString()).append(',');
        field(line, "logger", event.getLoggerName()).append(',');
        field(line, "thread", event.getThreadName()).append(',');
        field(line, "message", event.getFormattedMessage());
        IThrowableProxy thrown = event.getThrowableProxy();
        if (thrown != null) {
            field(
                    line.append(','),
                    "stack_trace",
                    ThrowableProxyUtil.asString(thrown).stripTrailing());
        }
        return line.append("}\n").toString();
    }

    private static StringBuilder field(StringBuilder line, String name, String value) {
        line.append('"').append(name).append("\":\"");
        QUOTE.quoteAsString(String.valueOf(value), line);
        return line.append('"');
    }
}
