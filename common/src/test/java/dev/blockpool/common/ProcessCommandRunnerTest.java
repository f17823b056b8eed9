package dev.blockpool.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ProcessCommandRunnerTest {

    private final CommandRunner runner = new ProcessCommandRunner();

    @Test
    void argumentsAreNotInterpretedByAShell() {
        var result = runner.run("echo", "$HOME; rm -rf /");
        assertThat(result.ok()).isTrue();
        assertThat(result.stdout()).isEqualTo("$HOME; rm -rf /\n");
    }

    @Test
    void failureCarriesExitCodeAndStderr() {
        assertThatThrownBy(() -> runner.runChecked("ls", "/no/such/path"))
                .isInstanceOf(StorageException.class)
                .hasMessageContaining("`ls /no/such/path` exited with 2")
                .hasMessageContaining("No such file");
    }

    @Test
    void commandThatOverrunsItsTimeoutIsKilled() {
        assertThatThrownBy(() -> runner.run(Duration.ofMillis(200), List.of("sleep", "30")))
                .isInstanceOf(StorageException.class)
                .hasMessageContaining("did not finish within");
    }

    @Test
    void missingExecutableIsReported() {
        assertThatThrownBy(() -> runner.run("no-such-command-blockpool"))
                .isInstanceOf(StorageException.class)
                .hasMessageContaining("cannot run `no-such-command-blockpool`");
    }

    @Test
    void childrenRunInTheCLocaleWhateverTheDriversLocale() {
        // Host tools' messages are matched in English ("No space left on device"), so a child
        // never inherits a translated locale.
        var result = runner.run("sh", "-c", "echo \"$LC_ALL\"");
        assertThat(result.stdout()).isEqualTo("C\n");
    }

    @Test
    void noToolIsRunOnAThreadThatMustNotWait() {
        List<Throwable> refused = new ArrayList<>();
        NoWaiting.run("the transport thread", () -> {
            try {
                runner.run("true");
            } catch (Throwable t) {
                refused.add(t);
            }
        });
        assertThat(refused)
                .singleElement()
                .isInstanceOf(IllegalStateException.class)
                .extracting(Throwable::getMessage)
                .asString()
                .startsWith("true would wait on the transport thread");
    }
}
