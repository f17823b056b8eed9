package dev.blockpool.driver.logging;

import dev.blockpool.driver.logging.LogConfigurator.LogFormat;
import dev.blockpool.driver.logging.LogConfigurator.LogLevel;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Logging configured as the command line would, with stderr captured; closing restores both. */
public final class CapturedLog implements AutoCloseable {

    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final PrintStream originalErr = System.err;

    public CapturedLog(LogFormat format, LogLevel level) {
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        LogConfigurator.apply(format, level);
    }

    public String text() {
        return err.toString(StandardCharsets.UTF_8);
    }

    public List<String> lines() {
        return text().lines().toList();
    }

    @Override
    public void close() {
        System.setErr(originalErr);
        LogConfigurator.apply(LogFormat.TEXT, LogLevel.INFO);
    }
}
