package dev.blockpool.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.TextFormat;
import csi.v1.Csi.CreateVolumeRequest;
import csi.v1.Csi.NodeStageVolumeRequest;
import csi.v1.Csi.VolumeCapability;
import org.junit.jupiter.api.Test;

class SecretRedactorTest {

    @Test
    void secretMapValuesAreMaskedAndKeysKept() {
        var request = CreateVolumeRequest.newBuilder()
                .setName("pvc-1")
                .putParameters("fsType", "xfs")
                .putSecrets("password", "hunter2")
                .build();
        String logged = TextFormat.printer().emittingSingleLine(true).printToString(SecretRedactor.redact(request));
        assertThat(logged)
                .doesNotContain("hunter2")
                .contains("password")
                .contains(SecretRedactor.MASK)
                .contains("pvc-1")
                .contains("xfs");
    }

    @Test
    void secretsInEveryMessageAreFoundThroughTheDescriptor() {
        var request = NodeStageVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setVolumeCapability(VolumeCapability.newBuilder()
                        .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4")))
                .putSecrets("token", "s3cr3t")
                .build();
        var redacted = (NodeStageVolumeRequest) SecretRedactor.redact(request);
        assertThat(redacted.getSecretsMap()).containsExactlyEntriesOf(java.util.Map.of("token", SecretRedactor.MASK));
        assertThat(redacted.getVolumeId()).isEqualTo("vol-1");
        assertThat(redacted.getVolumeCapability()).isEqualTo(request.getVolumeCapability());
    }

    @Test
    void everyFieldMarkedCsiSecretInTheSpecIsTreatedAsSecret() {
        long secretFields = csi.v1.Csi.getDescriptor().getMessageTypes().stream()
                .flatMap(message -> message.getFields().stream())
                .filter(SecretRedactor::isSecret)
                .count();
        // Every CSI request that may carry credentials has a `secrets` map marked csi_secret.
        assertThat(secretFields).isGreaterThanOrEqualTo(10);
        assertThat(CreateVolumeRequest.getDescriptor().findFieldByName("secrets"))
                .matches(SecretRedactor::isSecret);
        assertThat(CreateVolumeRequest.getDescriptor().findFieldByName("parameters"))
                .matches(field -> !SecretRedactor.isSecret(field));
    }

    @Test
    void summaryLineNamesTheIdsOfTheRequestOnly() {
        var request = csi.v1.Csi.ControllerPublishVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setNodeId("node-a")
                .setReadonly(true)
                .putVolumeContext("fsType", "ext4")
                .putSecrets("k", "v")
                .build();
        assertThat(CallLoggingInterceptor.keyFields(request)).isEqualTo(" [volume_id=vol-1 node_id=node-a]");
        assertThat(CallLoggingInterceptor.keyFields(csi.v1.Csi.ProbeRequest.getDefaultInstance()))
                .isEmpty();
    }
}
