package dev.blockpool.common;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class QuotingTest {

    @Test
    void controlCharactersAreVisibleAndLongValuesShortened() {
        assertThat(Quoting.quote("a\0b\n")).isEqualTo("\"a\\x00b\\x0a\"");
        assertThat(Quoting.quote("x".repeat(500))).hasSize(80 + 5).endsWith("...\"");
        assertThat(Quoting.quote("é".repeat(80))).isEqualTo("\"" + "é".repeat(80) + "\"");
    }
}
