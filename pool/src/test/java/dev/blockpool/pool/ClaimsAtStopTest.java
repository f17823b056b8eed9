package dev.blockpool.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.blockpool.common.ProcessCommandRunner;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pool's claims once their driver has begun to stop: one not held is never taken, so another
 * process may take it at once; one held stays until the stop lets it go, for the calls still
 * being drained.
 */
class ClaimsAtStopTest {

    @TempDir
    Path root;

    /** The stopping driver's claims, and another process's pool. */
    private ControllerClaim controller;

    private NodeClaim node;
    private Pool other;

    @BeforeEach
    void openThePoolTwice() {
        Pool stopping = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
        controller = stopping.controllerClaim();
        node = stopping.nodeClaim("node-1");
        other = Pool.open(root, new ProcessCommandRunner(), Clock.systemUTC(), Duration.ZERO);
    }

    @Test
    void aClaimNotHeldWhenTheStopBeginsIsNeverTakenAndStaysFreeForAnother() {
        controller.stopTaking();
        node.stopTaking();

        assertThat(controller.problem())
                .hasValueSatisfying(why -> assertThat(why).contains("this controller is stopping"));
        assertThat(controller.standingBy())
                .as("not standing by: it has nothing to take over")
                .isEmpty();
        assertThat(node.problem()).contains("this node plugin is stopping");
        assertThat(other.controllerClaim().problem()).isEmpty();
        assertThat(other.nodeClaim("node-1").problem()).isEmpty();
        other.controllerClaim().close();
    }

    @Test
    void aClaimHeldWhenTheStopBeginsStaysUntilItIsLetGo() {
        assertThat(controller.problem()).isEmpty();
        assertThat(node.problem()).isEmpty();

        controller.stopTaking();
        node.stopTaking();

        assertThat(controller.problem()).as("a call being drained still acts").isEmpty();
        assertThat(node.problem()).isEmpty();
        assertThat(other.controllerClaim().problem()).isPresent();
        assertThat(other.nodeClaim("node-1").problem()).isPresent();

        controller.close();
        node.close();

        assertThat(other.controllerClaim().problem()).isEmpty();
        assertThat(other.nodeClaim("node-1").problem()).isEmpty();
        other.controllerClaim().close();
    }
}
