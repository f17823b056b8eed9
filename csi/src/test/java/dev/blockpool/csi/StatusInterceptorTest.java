package dev.blockpool.csi;

import static dev.blockpool.csi.StatusAssertions.failure;
import static org.assertj.core.api.Assertions.assertThat;

import csi.v1.Csi.ProbeRequest;
import csi.v1.Csi.ProbeResponse;
import csi.v1.IdentityGrpc;
import dev.blockpool.common.StorageException;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** What a CO sees when a service method fails: the CSI code for each failure, and no Java class name. */
class StatusInterceptorTest {

    /** An Identity service whose Probe throws what the test gives it. */
    private static InProcessCsi failingWith(Supplier<RuntimeException> failure) {
        return InProcessCsi.serve(new IdentityGrpc.IdentityImplBase() {
            @Override
            public void probe(ProbeRequest request, StreamObserver<ProbeResponse> response) {
                throw failure.get();
            }
        });
    }

    private static Status probe(InProcessCsi served, Status.Code expected) {
        return failure(
                        () -> IdentityGrpc.newBlockingStub(served.channel()).probe(ProbeRequest.getDefaultInstance()),
                        expected)
                .getStatus();
    }

    @ParameterizedTest
    @EnumSource(StorageException.Kind.class)
    void everyStorageKindHasItsCsiCodeAndKeepsItsMessage(StorageException.Kind kind) {
        Status.Code expected = switch (kind) {
            case INVALID -> Status.Code.INVALID_ARGUMENT;
            case NOT_FOUND -> Status.Code.NOT_FOUND;
            case CONFLICT -> Status.Code.ALREADY_EXISTS;
            case BUSY -> Status.Code.ABORTED;
            case PRECONDITION -> Status.Code.FAILED_PRECONDITION;
            case OUT_OF_RANGE -> Status.Code.OUT_OF_RANGE;
            case EXHAUSTED -> Status.Code.RESOURCE_EXHAUSTED;
            case UNAVAILABLE -> Status.Code.UNAVAILABLE;
            case INTERNAL -> Status.Code.INTERNAL;
        };
        try (InProcessCsi served = failingWith(() -> new StorageException(kind, "volume vol-1: what happened", null))) {
            assertThat(probe(served, expected).getDescription()).isEqualTo("volume vol-1: what happened");
        }
    }

    @Test
    void aFullDiskIsResourceExhaustedWithTheSystemsWords() {
        try (InProcessCsi served = failingWith(() -> StorageException.io(
                new FileSystemException("/pool/volumes/vol-1.json.tmp", null, "No space left on device"),
                "cannot write the record of volume %s",
                "vol-1"))) {
            assertThat(probe(served, Status.Code.RESOURCE_EXHAUSTED).getDescription())
                    .isEqualTo("cannot write the record of volume vol-1: No space left on device");
        }
    }

    @Test
    void aCsiExceptionKeepsItsCode() {
        try (InProcessCsi served = failingWith(() -> CsiException.aborted("token not issued by this driver"))) {
            assertThat(probe(served, Status.Code.ABORTED).getDescription())
                    .isEqualTo("token not issued by this driver");
        }
    }

    @Test
    void anUnexpectedExceptionIsInternalWithoutItsClassName() {
        try (InProcessCsi served =
                failingWith(() -> new UncheckedIOException("boom", new java.io.IOException("disk on fire")))) {
            assertThat(probe(served, Status.Code.INTERNAL).getDescription())
                    .doesNotContain("java.", "UncheckedIOException")
                    .contains("log");
        }
        try (InProcessCsi served = failingWith(() -> new NullPointerException("x is null"))) {
            assertThat(probe(served, Status.Code.INTERNAL).getDescription()).doesNotContain("NullPointerException");
        }
    }
}
