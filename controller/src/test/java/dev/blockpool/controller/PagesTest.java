package dev.blockpool.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.csi.CsiException;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PagesTest {

    private static final List<String> IDS = IntStream.range(0, 10).mapToObj(i -> "vol-" + i).toList();

    private static Pages.Page<String> page(List<String> ids, int max, String token) {
        return Pages.page(ids, Function.identity(), max, token);
    }

    @Test
    void zeroMaxEntriesReturnsEverythingWithoutAToken() {
        Pages.Page<String> page = page(IDS, 0, "");
        assertThat(page.entries()).isEqualTo(IDS);
        assertThat(page.nextToken()).isEmpty();
    }

    @Test
    void maxEntriesIsACountAndTokensWalkTheWholeList() {
        List<String> seen = new ArrayList<>();
        String token = "";
        int pages = 0;
        do {
            Pages.Page<String> page = page(IDS, 3, token);
            assertThat(page.entries()).hasSizeLessThanOrEqualTo(3);
            seen.addAll(page.entries());
            token = page.nextToken();
            pages++;
        } while (!token.isEmpty());
        assertThat(seen).isEqualTo(IDS);
        assertThat(pages).isEqualTo(4);
    }

    @Test
    void anExactFitEndsWithoutAToken() {
        Pages.Page<String> first = page(IDS, 5, "");
        Pages.Page<String> second = page(IDS, 5, first.nextToken());
        assertThat(second.entries()).containsExactly("vol-5", "vol-6", "vol-7", "vol-8", "vol-9");
        assertThat(second.nextToken()).isEmpty();
        assertThat(page(IDS, 10, "").nextToken()).isEmpty();
        assertThat(page(IDS, 11, "").nextToken()).isEmpty();
    }

    @Test
    void tokensAreOpaqueToTheCaller() {
        String token = page(IDS, 2, "").nextToken();
        assertThat(token).isNotEmpty().doesNotContain("vol-1").matches("[A-Za-z0-9_-]+");
    }

    @Test
    void entriesDeletedBetweenPagesAreNeitherRepeatedNorCauseSkips() {
        Pages.Page<String> first = page(IDS, 3, "");
        assertThat(first.entries()).containsExactly("vol-0", "vol-1", "vol-2");
        List<String> shrunk = new ArrayList<>(IDS);
        shrunk.removeAll(List.of("vol-1", "vol-2", "vol-3")); // including the entry the token points after

        Pages.Page<String> second = page(shrunk, 3, first.nextToken());
        assertThat(second.entries()).containsExactly("vol-4", "vol-5", "vol-6");
    }

    @Test
    void entriesAddedBetweenPagesAppearWhenTheySortAfterTheToken() {
        Pages.Page<String> first = page(IDS, 3, "");
        List<String> grown = new ArrayList<>(IDS);
        grown.addAll(List.of("vol-0a", "vol-2a", "vol-99"));
        grown.sort(null);

        List<String> rest = new ArrayList<>();
        String token = first.nextToken();
        while (!token.isEmpty()) {
            Pages.Page<String> page = page(grown, 3, token);
            rest.addAll(page.entries());
            token = page.nextToken();
        }
        assertThat(rest).startsWith("vol-2a", "vol-3").contains("vol-99").doesNotContain("vol-0", "vol-0a", "vol-2");
        assertThat(rest).doesNotHaveDuplicates();
    }

    @Test
    void everythingDeletedAfterTheFirstPageGivesAnEmptyLastPage() {
        Pages.Page<String> first = page(IDS, 3, "");
        Pages.Page<String> second = page(List.of("vol-0"), 3, first.nextToken());
        assertThat(second.entries()).isEmpty();
        assertThat(second.nextToken()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"garbage", "!!!", "after:", "YWZ0ZXI6", "dm9sLTE", "%%%%", "\0"})
    void aTokenThisDriverDidNotIssueIsAborted(String token) {
        assertThatThrownBy(() -> page(IDS, 3, token)).isInstanceOfSatisfying(CsiException.class,
                e -> assertThat(e.code()).isEqualTo(Status.Code.ABORTED));
    }

    @Test
    void aValidlyEncodedTokenResumesAfterItsId() {
        String token = Base64.getUrlEncoder().withoutPadding()
                .encodeToString("after:vol-4".getBytes(StandardCharsets.UTF_8));
        assertThat(page(IDS, 2, token).entries()).containsExactly("vol-5", "vol-6");
    }

    @Test
    void negativeMaxEntriesIsInvalid() {
        assertThatThrownBy(() -> page(IDS, -1, "")).isInstanceOfSatisfying(CsiException.class,
                e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT));
    }

    @Test
    void anEmptyListHasOneEmptyPage() {
        Pages.Page<String> page = page(List.of(), 5, "");
        assertThat(page.entries()).isEmpty();
        assertThat(page.nextToken()).isEmpty();
    }
}
