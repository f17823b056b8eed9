package dev.blockpool.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.csi.CsiException;
import dev.blockpool.pool.Page;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The paging token: what the pool's page ended at, opaque to the CO, and nothing else accepted. */
class PagesTest {

    private static String tokenAfter(String id) {
        return Pages.nextToken(new Page<>(List.of(id), Optional.of(id)));
    }

    @Test
    void aTokenResumesAfterTheIdItsPageEndedAt() {
        assertThat(Pages.after(tokenAfter("vol-4"))).contains("vol-4");
    }

    @Test
    void theLastPageHasNoTokenAndNoTokenStartsAtTheBeginning() {
        assertThat(Pages.nextToken(new Page<>(List.of("vol-9"), Optional.empty()))).isEmpty();
        assertThat(Pages.after("")).isEmpty();
    }

    @Test
    void tokensAreOpaqueToTheCaller() {
        assertThat(tokenAfter("vol-1")).isNotEmpty().doesNotContain("vol-1").matches("[A-Za-z0-9_-]+");
    }

    @ParameterizedTest
    @ValueSource(strings = {"garbage", "!!!", "after:", "YWZ0ZXI6", "dm9sLTE", "%%%%", "\0"})
    void aTokenThisDriverDidNotIssueIsAborted(String token) {
        assertThatThrownBy(() -> Pages.after(token)).isInstanceOfSatisfying(CsiException.class,
                e -> assertThat(e.code()).isEqualTo(Status.Code.ABORTED));
    }

    @Test
    void aValidlyEncodedTokenResumesAfterItsId() {
        String token = Base64.getUrlEncoder().withoutPadding()
                .encodeToString("after:vol-4".getBytes(StandardCharsets.UTF_8));
        assertThat(Pages.after(token)).contains("vol-4");
    }

    @Test
    void negativeMaxEntriesIsInvalidAndZeroMeansAll() {
        assertThatThrownBy(() -> Pages.maxEntries(-1)).isInstanceOfSatisfying(CsiException.class,
                e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
        assertThat(Pages.maxEntries(0)).isZero();
    }
}
