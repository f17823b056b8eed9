package dev.blockpool.flexvolume;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.blockpool.common.FsType;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FlexOptionsTest {

    private static final String VOLUME = "vol-0123456789abcdef0123456789abcdef";

    /** What kubelet passes for a PV with flexVolume.fsType ext4, readOnly, and a secretRef. */
    private static final String KUBELET = """
            {"kubernetes.io/fsType":"ext4","kubernetes.io/mounterArgs.FsGroup":"2000",\
            "kubernetes.io/pod.name":"web-0","kubernetes.io/pod.namespace":"default",\
            "kubernetes.io/pod.uid":"3f1c2a9e-0d4b-4a57-9d7e-1b2c3d4e5f60","kubernetes.io/pvOrVolumeName":"data",\
            "kubernetes.io/readwrite":"ro","kubernetes.io/secret/token":"c2VjcmV0",\
            "kubernetes.io/serviceAccount.name":"default","volumeID":"%s"}""".formatted(VOLUME);

    @Test
    void readsTheVolumeTheFilesystemAndReadOnlyFromKubeletsOptions() {
        assertThat(FlexOptions.parse(KUBELET)).isEqualTo(new FlexOptions(VOLUME, Optional.of(FsType.EXT4), true));
    }

    @Test
    void anEmptyFsTypeLeavesTheChoiceToTheVolumeAndNoReadWriteIsWritable() {
        assertThat(FlexOptions.parse("{\"volumeID\":\"%s\",\"kubernetes.io/fsType\":\"\"}".formatted(VOLUME)))
                .isEqualTo(new FlexOptions(VOLUME, Optional.empty(), false));
    }

    @Test
    void unknownOptionsAreNamedAndTheirValuesNeverRepeated() {
        assertThatThrownBy(() -> FlexOptions.parse(
                        "{\"volumeID\":\"%s\",\"size\":\"1Gi\",\"pool\":\"secret-pool\"}".formatted(VOLUME)))
                .isInstanceOf(FlexFailure.class)
                .hasMessage("unknown options \"pool\", \"size\" in the volume's flexVolume.options: blockpool's only "
                        + "option is volumeID")
                .message()
                .doesNotContain("secret-pool");
    }

    @Test
    void aSecretInMalformedOptionsIsNotQuoted() {
        assertThatThrownBy(() -> FlexOptions.parse("{\"kubernetes.io/secret/token\": c2VjcmV0}"))
                .hasMessageContaining("not valid JSON (at character ")
                .message()
                .doesNotContain("c2VjcmV0");
        assertThatThrownBy(() -> FlexOptions.parse("{\"kubernetes.io/secret/token\": 12345}"))
                .hasMessage("option \"kubernetes.io/secret/token\" is not a string; FlexVolume options are strings");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "[]", "\"volumeID\"", "{} {}", "{\"volumeID\":\"a\",\"volumeID\":\"b\"}"})
    void anythingButOneObjectOfStringsIsRefused(String json) {
        assertThatThrownBy(() -> FlexOptions.parse(json))
                .isInstanceOf(FlexFailure.class)
                .hasMessageContaining("JSON");
    }

    @Test
    void theVolumeIdMustBeOneTheDriverIssues() {
        assertThatThrownBy(() -> FlexOptions.parse("{}")).hasMessageContaining("has no volumeID");
        assertThatThrownBy(() -> FlexOptions.parse("{\"volumeID\":\"../../etc\"}"))
                .hasMessage("volumeID \"../../etc\" is not a blockpool volume ID: it is vol- and 32 hex digits, as "
                        + "CreateVolume returns it");
    }

    @Test
    void fsTypeAndReadWriteAreChecked() {
        assertThatThrownBy(() ->
                        FlexOptions.parse("{\"volumeID\":\"%s\",\"kubernetes.io/fsType\":\"btrfs\"}".formatted(VOLUME)))
                .hasMessage("fsType \"btrfs\" is not supported: use ext4 or xfs, or leave it out for the volume's own");
        assertThatThrownBy(() -> FlexOptions.parse(
                        "{\"volumeID\":\"%s\",\"kubernetes.io/readwrite\":\"yes\"}".formatted(VOLUME)))
                .hasMessage("kubernetes.io/readwrite is \"yes\"; kubelet passes rw or ro");
    }
}
