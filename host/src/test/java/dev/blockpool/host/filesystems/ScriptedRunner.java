package dev.blockpool.host.filesystems;

import dev.blockpool.common.CommandRunner;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * A {@link CommandRunner} that runs nothing: it records each command and answers with what the
 * script returns for it (exit 0 and no output when the script has no answer).
 */
final class ScriptedRunner implements CommandRunner {

    final List<String> commands = new ArrayList<>();
    private final Function<List<String>, Result> script;

    ScriptedRunner(Function<List<String>, Result> script) {
        this.script = script;
    }

    static Result exit(List<String> command, int code, String stderr) {
        return new Result(command, code, "", stderr);
    }

    @Override
    public Result run(Duration timeout, List<String> command) {
        commands.add(String.join(" ", command));
        Result answer = script.apply(command);
        return answer != null ? answer : exit(command, 0, "");
    }
}
