package dev.blockpool.driver;

import dev.blockpool.driver.LogConfigurator.LogFormat;
import dev.blockpool.driver.LogConfigurator.LogLevel;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Logging configured as the command line would, with stderr captured; closing restores both. */
final class CapturedLog implements AutoCloseable {

    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final PrintStream originalErr = System.err;

    CapturedLog(LogFormat format, LogLevel level) {
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        LogConfigurator.apply(format, level);
    }

    String text() {
        return err.toString(StandardCharsets.UTF_8);
    }

    List<String> lines() {
        return text().lines().toList();
    }

    @Override
    public void close() {
        System.setErr(originalErr);
        LogConfigurator.apply(LogFormat.TEXT, LogLevel.INFO);
    }
}
