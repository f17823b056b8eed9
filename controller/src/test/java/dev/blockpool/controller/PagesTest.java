package dev.blockpool.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.records.Page;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The paging token: where the pool's page stopped, opaque to the CO, and nothing else accepted. */
class PagesTest {

    private static String tokenAt(long position) {
        return Pages.nextToken(new Page<>(List.of("vol-1"), OptionalLong.of(position)));
    }

    @Test
    void aTokenResumesWhereItsPageStopped() {
        assertThat(Pages.from(tokenAt(4))).isEqualTo(4);
        assertThat(Pages.from(tokenAt(Long.MAX_VALUE))).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void theLastPageHasNoTokenAndNoTokenStartsAtTheBeginning() {
        assertThat(Pages.nextToken(new Page<>(List.of("vol-9"), OptionalLong.empty())))
                .isEmpty();
        assertThat(Pages.from("")).isZero();
    }

    @Test
    void tokensAreOpaqueToTheCaller() {
        assertThat(tokenAt(1234)).isNotEmpty().doesNotContain("1234").matches("[A-Za-z0-9_-]+");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {"garbage", "!!!", "at:", "YXQ6", "YXQ6LTU", "YXQ6MA", "YXQ6eA", "YWZ0ZXI6dm9sLTQ", "%%%%", "\0"})
    void aTokenThisDriverDidNotIssueIsAborted(String token) {
        // "at:", "at:-5", "at:0", "at:x", and an older driver's "after:vol-4"
        assertThatThrownBy(() -> Pages.from(token))
                .isInstanceOfSatisfying(
                        CsiException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.ABORTED));
    }

    @Test
    void aValidlyEncodedTokenResumesAtItsPosition() {
        String token = Base64.getUrlEncoder().withoutPadding().encodeToString("at:4".getBytes(StandardCharsets.UTF_8));
        assertThat(Pages.from(token)).isEqualTo(4);
    }

    @Test
    void negativeMaxEntriesIsInvalidAndZeroMeansAll() {
        assertThatThrownBy(() -> Pages.maxEntries(-1))
                .isInstanceOfSatisfying(
                        CsiException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
        assertThat(Pages.maxEntries(0)).isZero();
    }
}
