package dev.blockpool.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import csi.v1.Csi.NodeStageVolumeRequest;
import csi.v1.Csi.NodeStageVolumeResponse;
import csi.v1.Csi.NodeUnstageVolumeRequest;
import csi.v1.Csi.NodeUnstageVolumeResponse;
import csi.v1.Csi.ProbeRequest;
import csi.v1.Csi.ProbeResponse;
import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import dev.blockpool.common.Endpoint;
import dev.blockpool.csi.StatusInterceptor;
import dev.blockpool.csi.UnixSocketChannels;
import io.grpc.ForwardingServerCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A call whose thread waits on what does not answer (a pool whose server is gone) is answered
 * UNAVAILABLE before the client's deadline, other calls go on, the late answer is dropped, and once
 * too many calls run past their deadlines, or all threads for calls are taken, new ones are refused
 * at once, unstage and Probe excepted.
 */
class CallDeadlinesTest {

    private static final long CLIENT_DEADLINE_MS = 4000;

    @TempDir
    Path dir;

    /** NodeStageVolume waits until the "pool" answers; NodeUnstageVolume answers at once. */
    private static final class WaitingNode extends NodeGrpc.NodeImplBase {
        final CountDownLatch poolAnswers = new CountDownLatch(1);

        @Override
        public void nodeStageVolume(NodeStageVolumeRequest request, StreamObserver<NodeStageVolumeResponse> response) {
            try {
                poolAnswers.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            response.onNext(NodeStageVolumeResponse.getDefaultInstance());
            response.onCompleted();
        }

        @Override
        public void nodeUnstageVolume(
                NodeUnstageVolumeRequest request, StreamObserver<NodeUnstageVolumeResponse> response) {
            response.onNext(NodeUnstageVolumeResponse.getDefaultInstance());
            response.onCompleted();
        }
    }

    private static final class ReadyIdentity extends IdentityGrpc.IdentityImplBase {
        @Override
        public void probe(ProbeRequest request, StreamObserver<ProbeResponse> response) {
            response.onNext(ProbeResponse.getDefaultInstance());
            response.onCompleted();
        }
    }

    private final WaitingNode node = new WaitingNode();
    /**
     * NodeStageVolume calls whose last step, their completion, has begun: a call's completion runs
     * on its thread too, after the client has its answer, so until then a freed thread is taken again.
     */
    private final AtomicInteger stagesCompleting = new AtomicInteger();

    private final ServerInterceptor countStagesCompleting = new ServerInterceptor() {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(
                ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
            boolean stage = call.getMethodDescriptor().getFullMethodName().equals(STAGE);
            return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(
                    next.startCall(call, headers)) {
                @Override
                public void onComplete() {
                    if (stage) {
                        stagesCompleting.incrementAndGet();
                    }
                    super.onComplete();
                }

                @Override
                public void onCancel() {
                    if (stage) {
                        stagesCompleting.incrementAndGet();
                    }
                    super.onCancel();
                }
            };
        }
    };
    private final EventLoopGroup clientLoop = UnixSocketChannels.clientLoop();
    private UnixSocketServer server;
    private ManagedChannel channel;

    private CallDeadlines serve(int mostStuck) throws Exception {
        return serve(mostStuck, new CallThreads(), CallDeadlines.WITHOUT_DEADLINE);
    }

    private CallDeadlines serve(int mostStuck, CallThreads threads, Duration withoutDeadline) throws Exception {
        CallDeadlines deadlines = new CallDeadlines(mostStuck, threads, withoutDeadline);
        Path socket = dir.resolve("csi.sock");
        server = UnixSocketServer.start(
                Endpoint.parse(socket.toString()),
                List.of(node.bindService(), new ReadyIdentity().bindService()),
                List.of(),
                List.of(new StatusInterceptor(), deadlines, new CallLoggingInterceptor()),
                List.of(countStagesCompleting),
                threads);
        channel = UnixSocketChannels.channel(socket, clientLoop);
        probe(); // connected before the calls with deadlines, which a first connection would eat into
        return deadlines;
    }

    @AfterEach
    void stop() {
        if (channel != null) {
            channel.shutdownNow();
        }
        if (server != null) {
            server.stop(Duration.ofSeconds(1));
        }
        node.poolAnswers.countDown();
        clientLoop.shutdownGracefully();
    }

    private NodeGrpc.NodeBlockingStub node() {
        return NodeGrpc.newBlockingStub(channel).withDeadlineAfter(CLIENT_DEADLINE_MS, TimeUnit.MILLISECONDS);
    }

    private void stage() {
        node().nodeStageVolume(NodeStageVolumeRequest.getDefaultInstance());
    }

    private void unstage() {
        node().nodeUnstageVolume(NodeUnstageVolumeRequest.getDefaultInstance());
    }

    private void probe() {
        IdentityGrpc.newBlockingStub(channel)
                .withDeadlineAfter(CLIENT_DEADLINE_MS, TimeUnit.MILLISECONDS)
                .probe(ProbeRequest.getDefaultInstance());
    }

    private static void assertRetryLater(Runnable call, String messagePart) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode())
                    .as("answered by the server before the client's deadline, with a code sidecars retry")
                    .isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(e.getStatus().getDescription()).contains(messagePart);
        });
    }

    /** Waits for what the server does after an answer, which the client does not see. */
    private static void awaitTrue(String what, BooleanSupplier condition) throws InterruptedException {
        // Up to a minute: a wait for what happens, not a bound on how fast (a loaded machine is slow).
        for (int i = 0; i < 6000 && !condition.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
        assertThat(condition.getAsBoolean()).as(what).isTrue();
    }

    @Test
    void aCallThatWaitsOnWhatDoesNotAnswerIsAnsweredBeforeItsDeadlineAndTheOthersGoOn() throws Exception {
        CallDeadlines deadlines = serve(CallDeadlines.MOST_STUCK);

        assertRetryLater(this::stage, "csi.v1.Node/NodeStageVolume did not finish within");
        assertThat(deadlines.stuck()).isEqualTo(1);
        unstage();

        node.poolAnswers.countDown(); // its late answer goes nowhere
        awaitTrue("the call's thread returned", () -> deadlines.stuck() == 0);
        stage();
        unstage();
    }

    @Test
    void onceTooManyCallsRunPastTheirDeadlinesOthersAreRefusedAtOnceButUnstageAndProbe() throws Exception {
        CallDeadlines deadlines = serve(1);
        assertRetryLater(this::stage, "did not finish within");

        assertRetryLater(this::stage, "refused: 1 calls are still running past their deadlines");
        unstage(); // lets go of a volume without the pool: never refused for stuck calls
        probe();

        node.poolAnswers.countDown();
        awaitTrue("the call's thread returned", () -> deadlines.stuck() == 0);
        stage();
    }

    @Test
    void aCallGivenAFarDeadlineCountsAsStuckOnceItRunsLongerThanACallWithoutOne() throws Exception {
        CallDeadlines deadlines = serve(1, new CallThreads(), Duration.ofMillis(300));
        NodeGrpc.NodeFutureStub async = NodeGrpc.newFutureStub(channel).withDeadlineAfter(1, TimeUnit.HOURS);
        async.nodeStageVolume(NodeStageVolumeRequest.getDefaultInstance());

        awaitTrue("a call an hour from its deadline counted as stuck", () -> deadlines.stuck() == 1);
        assertRetryLater(this::stage, "refused: 1 calls are still running past their deadlines");

        node.poolAnswers.countDown();
        awaitTrue("the call's thread returned", () -> deadlines.stuck() == 0);
    }

    @Test
    void callsBeyondTheThreadCeilingAreRefusedAtOnceWhileUnstageAndProbeHaveThreadsOfTheirOwn() throws Exception {
        // Two threads for unstage and Probe: a call's last step (its completion) may still hold one
        // once its client has the answer, when the next call of the kind comes.
        CallThreads threads = new CallThreads(2, 2, CallThreads.KEEP_ALIVE);
        serve(CallDeadlines.MOST_STUCK, threads, CallDeadlines.WITHOUT_DEADLINE);
        NodeGrpc.NodeFutureStub async =
                NodeGrpc.newFutureStub(channel).withDeadlineAfter(CLIENT_DEADLINE_MS, TimeUnit.MILLISECONDS);
        async.nodeStageVolume(NodeStageVolumeRequest.getDefaultInstance());
        async.nodeStageVolume(NodeStageVolumeRequest.getDefaultInstance());
        awaitTrue("both threads for calls taken", () -> threads.forCall(STAGE) == null);

        assertRetryLater(this::stage, "refused: all 2 threads for calls are busy");
        unstage();
        probe();

        node.poolAnswers.countDown();
        // The two that held the threads and the one refused: no step of theirs is left to take a thread.
        awaitTrue("the threads are free again", () -> stagesCompleting.get() == 3 && threads.forCall(STAGE) != null);
        stage();
    }

    private static final String STAGE = NodeGrpc.getNodeStageVolumeMethod().getFullMethodName();
}
