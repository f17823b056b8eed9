package dev.blockpool.systemtest;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import csi.v1.ControllerGrpc;
import csi.v1.Csi;
import csi.v1.Csi.VolumeCapability.AccessMode.Mode;
import csi.v1.GroupControllerGrpc;
import csi.v1.IdentityGrpc;
import csi.v1.NodeGrpc;
import dev.blockpool.common.HostRequirements;
import dev.blockpool.csi.RawRequests;
import dev.blockpool.csi.StatusAssertions;
import io.grpc.CallOptions;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The fuzz loop: picks a method the driver serves, builds a well-formed request from the run's
 * real state, breaks one to three of its string fields (or its bytes, or the connection), sends
 * it, and then judges the answer and the host: the status, the mounts and loop devices, the
 * sentinel tree, the scratch kubelet tree, the pool. A SnapshotMetadata stream is read to its end
 * or cancelled early, each message judged by {@link StreamRules}. A violation is recorded with the
 * request that caused it, and the damage is undone so that the run goes on to find the next one.
 */
final class Fuzzer {

    private static final Pattern JAVA_CLASS = Pattern.compile(StatusAssertions.JAVA_CLASS_NAME);
    private static final Set<String> PATH_FIELDS = Set.of("staging_target_path", "target_path", "volume_path");
    private static final long DEADLINE_SECONDS = 30;
    private static final boolean CAN_GROW_MOUNTED_FILESYSTEMS =
            HostRequirements.hasCapability(HostRequirements.CAP_SYS_RESOURCE);
    /** Requests that change nothing: the only ones a raw connection sends whole and then walks away from. */
    private static final List<String> READ_ONLY = List.of(
            "csi.v1.Node/NodeGetCapabilities",
            "csi.v1.Node/NodeGetInfo",
            "csi.v1.Controller/GetCapacity",
            "csi.v1.Controller/ListVolumes",
            "csi.v1.Controller/ControllerGetCapabilities",
            "csi.v1.Identity/Probe",
            "csi.v1.Identity/GetPluginInfo");
    /**
     * The methods behind each capability, as the CSI spec ties them; a method is fuzzed when the driver advertises it.
     */
    private static final Map<String, List<String>> CONTROLLER_METHODS = Map.ofEntries(
            Map.entry("CREATE_DELETE_VOLUME", List.of("CreateVolume", "DeleteVolume")),
            Map.entry("PUBLISH_UNPUBLISH_VOLUME", List.of("ControllerPublishVolume", "ControllerUnpublishVolume")),
            Map.entry("LIST_VOLUMES", List.of("ListVolumes")),
            Map.entry("GET_CAPACITY", List.of("GetCapacity")),
            Map.entry("CREATE_DELETE_SNAPSHOT", List.of("CreateSnapshot", "DeleteSnapshot")),
            Map.entry("LIST_SNAPSHOTS", List.of("ListSnapshots")),
            Map.entry("GET_SNAPSHOT", List.of("GetSnapshot")),
            Map.entry("EXPAND_VOLUME", List.of("ControllerExpandVolume")),
            Map.entry("GET_VOLUME", List.of("ControllerGetVolume")),
            Map.entry("MODIFY_VOLUME", List.of("ControllerModifyVolume")),
            Map.entry("GET_VOLUME_HEALTH", List.of("ControllerGetVolumeHealth")),
            Map.entry("LIST_VOLUME_HEALTH", List.of("ControllerListVolumeHealth")));

    private static final Map<String, List<String>> NODE_METHODS = Map.of(
            "STAGE_UNSTAGE_VOLUME", List.of("NodeStageVolume", "NodeUnstageVolume"),
            "GET_VOLUME_STATS", List.of("NodeGetVolumeStats"),
            "EXPAND_VOLUME", List.of("NodeExpandVolume"),
            "GET_VOLUME_HEALTH", List.of("NodeGetVolumeHealth"),
            "GET_STORAGE_HEALTH", List.of("NodeGetStorageHealth"));
    private static final Map<String, List<String>> GROUP_CONTROLLER_METHODS = Map.of(
            "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT",
            List.of("CreateVolumeGroupSnapshot", "DeleteVolumeGroupSnapshot", "GetVolumeGroupSnapshot"));
    /** The node's mount calls reach the most code, so they come up most often. */
    private static final Map<String, Integer> WEIGHTS = Map.of(
            "NodeStageVolume",
            4,
            "NodePublishVolume",
            5,
            "NodeUnpublishVolume",
            4,
            "NodeUnstageVolume",
            2,
            "NodeExpandVolume",
            2,
            "NodeGetVolumeStats",
            2,
            "CreateVolume",
            3,
            "CreateSnapshot",
            2,
            "ControllerPublishVolume",
            2,
            "ControllerExpandVolume",
            2);

    /** A method of the Controller or Node service, with every string slot of its request. */
    record Rpc(String service, String name, Message prototype, List<StringSlots.Slot> slots, int weight) {
        String fullName() {
            return "csi.v1." + service + "/" + name;
        }
    }

    private record Call(Rpc rpc, Message request, byte[] payload, String summary) {}

    private final FuzzTree tree;
    private final DriverProcess driver;
    private final ManagedChannel channel;
    private final Random random;
    private final Violations violations;
    private final HostView host;
    private final Templates templates;
    private final HostileValues values;
    private final RawWire wire;
    private final List<Rpc> rpcs = new ArrayList<>();
    private final Map<String, MethodDescriptor<byte[], byte[]>> methods = new HashMap<>();
    private final Map<String, Integer> cursors = new HashMap<>();
    private final Set<String> slotsFuzzed = new HashSet<>();
    private final Map<String, Map<Status.Code, Integer>> answers = new TreeMap<>();
    private final Map<String, Integer> kinds = new TreeMap<>();
    /** Legit paths any request named, and those a successful stage or publish mounted. */
    private final Set<Path> legitNamed = new HashSet<>();

    private final Set<Path> legitMounted = new HashSet<>();

    private TreeSnapshot outsideOriginal;
    private TreeSnapshot outsideLast;
    private TreeSnapshot scratchOriginal;
    private TreeSnapshot scratchLast;
    private Map<Integer, HostView.Mount> lastMounts = Map.of();
    private Set<String> lastLoops = Set.of();
    private int sent;
    private long driverNanos;
    private long checkNanos;
    private long rawNanos;
    private final Map<String, Long> methodNanos = new TreeMap<>();
    private int otherCalls;
    private int noAnswerInARow;
    private boolean stopped;

    Fuzzer(FuzzTree tree, DriverProcess driver, ManagedChannel channel, Random random, Violations violations) {
        this.tree = tree;
        this.driver = driver;
        this.channel = channel;
        this.random = random;
        this.violations = violations;
        this.host = new HostView(tree.root(), tree.pool());
        this.templates = new Templates(random, tree, CAN_GROW_MOUNTED_FILESYSTEMS);
        this.values = new HostileValues(random, tree, templates::realIds);
        this.wire = new RawWire(random);
    }

    int sent() {
        return sent;
    }

    int otherCalls() {
        return otherCalls;
    }

    boolean stoppedEarly() {
        return stopped;
    }

    /**
     * Learns what the driver serves, creates the fixture volumes (two ext4, two block) and a
     * snapshot, attaches the fixtures to the node and stages and publishes some of them, so that
     * the run starts with real state to aim at. Takes the baselines of the host before that.
     */
    void setUp() throws IOException {
        outsideOriginal = outsideLast = tree.outside();
        scratchOriginal = scratchLast = tree.scratch();
        lastMounts = ownMounts();
        lastLoops = loops();
        var controller = ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
        var node = NodeGrpc.newBlockingStub(channel).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
        Set<String> controllerCaps = controller
                .controllerGetCapabilities(Csi.ControllerGetCapabilitiesRequest.getDefaultInstance())
                .getCapabilitiesList()
                .stream()
                .map(c -> c.getRpc().getType().name())
                .collect(Collectors.toSet());
        Set<String> nodeCaps =
                node
                        .nodeGetCapabilities(Csi.NodeGetCapabilitiesRequest.getDefaultInstance())
                        .getCapabilitiesList()
                        .stream()
                        .map(c -> c.getRpc().getType().name())
                        .collect(Collectors.toSet());
        Set<String> groupCaps = GroupControllerGrpc.newBlockingStub(channel)
                .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
                .groupControllerGetCapabilities(Csi.GroupControllerGetCapabilitiesRequest.getDefaultInstance())
                .getCapabilitiesList()
                .stream()
                .map(c -> c.getRpc().getType().name())
                .collect(Collectors.toSet());
        otherCalls += 3;
        List<String> controllerMethods =
                new ArrayList<>(List.of("ValidateVolumeCapabilities", "ControllerGetCapabilities"));
        controllerCaps.stream()
                .map(CONTROLLER_METHODS::get)
                .filter(m -> m != null)
                .forEach(controllerMethods::addAll);
        List<String> nodeMethods = new ArrayList<>(
                List.of("NodePublishVolume", "NodeUnpublishVolume", "NodeGetCapabilities", "NodeGetInfo"));
        nodeCaps.stream().map(NODE_METHODS::get).filter(m -> m != null).forEach(nodeMethods::addAll);
        addRpcs("Controller", controllerMethods);
        addRpcs("Node", nodeMethods);
        List<String> groupMethods = new ArrayList<>(List.of("GroupControllerGetCapabilities"));
        groupCaps.stream()
                .map(GROUP_CONTROLLER_METHODS::get)
                .filter(m -> m != null)
                .forEach(groupMethods::addAll);
        addRpcs("GroupController", groupMethods);
        boolean servesMetadata = IdentityGrpc.newBlockingStub(channel)
                .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
                .getPluginCapabilities(Csi.GetPluginCapabilitiesRequest.getDefaultInstance())
                .getCapabilitiesList()
                .stream()
                .anyMatch(c -> c.getService().getType() == Csi.PluginCapability.Service.Type.SNAPSHOT_METADATA_SERVICE);
        otherCalls++;
        if (servesMetadata) {
            addRpcs("SnapshotMetadata", List.of("GetMetadataAllocated", "GetMetadataDelta"));
        }

        for (FuzzTree.FixturePaths paths : tree.fixtures()) {
            Csi.VolumeCapability capability = Templates.capability(paths.block(), Mode.SINGLE_NODE_WRITER);
            String id = controller
                    .createVolume(Csi.CreateVolumeRequest.newBuilder()
                            .setName(paths.name())
                            .setCapacityRange(Csi.CapacityRange.newBuilder().setRequiredBytes(Templates.SIZE))
                            .addVolumeCapabilities(capability)
                            .build())
                    .getVolume()
                    .getVolumeId();
            controller.controllerPublishVolume(Csi.ControllerPublishVolumeRequest.newBuilder()
                    .setVolumeId(id)
                    .setNodeId(Templates.NODE_ID)
                    .setVolumeCapability(capability)
                    .build());
            templates.fixtures.add(new Templates.Fixture(paths.name(), id, paths.block(), paths));
            tree.addPoolFiles(paths.name(), id);
            tree.keepImage(id);
            otherCalls += 2;
        }
        Templates.Fixture first = templates.fixtures.getFirst();
        templates.snapshots.add(controller
                .createSnapshot(Csi.CreateSnapshotRequest.newBuilder()
                        .setSourceVolumeId(first.id())
                        .setName("fuzz-fixture-snapshot")
                        .build())
                .getSnapshot()
                .getSnapshotId());
        otherCalls++;
        for (Templates.Fixture f : templates.fixtures) {
            send(
                    new Call(
                            rpc("NodeStageVolume"),
                            Csi.NodeStageVolumeRequest.newBuilder()
                                    .setVolumeId(f.id())
                                    .setStagingTargetPath(f.paths().staging().toString())
                                    .setVolumeCapability(Templates.capability(f.block(), Mode.SINGLE_NODE_WRITER))
                                    .build(),
                            null,
                            "set-up: stage " + f.name()),
                    false);
            send(
                    new Call(
                            rpc("NodePublishVolume"),
                            Csi.NodePublishVolumeRequest.newBuilder()
                                    .setVolumeId(f.id())
                                    .setStagingTargetPath(f.paths().staging().toString())
                                    .setTargetPath(
                                            f.paths().targets().getFirst().toString())
                                    .setVolumeCapability(Templates.capability(f.block(), Mode.SINGLE_NODE_WRITER))
                                    .build(),
                            null,
                            "set-up: publish " + f.name()),
                    false);
        }
        if (templates.staged.size() != templates.fixtures.size()
                || templates.published.size() != templates.fixtures.size()) {
            throw new IllegalStateException(
                    "the driver did not stage and publish the fixtures; violations so far:" + violations.report());
        }
    }

    private void addRpcs(String service, List<String> names) {
        var serviceDescriptor = Csi.getDescriptor().findServiceByName(service);
        for (String name : new LinkedHashSet<>(names)) {
            var method = serviceDescriptor.findMethodByName(name);
            Descriptor input = method.getInputType();
            rpcs.add(new Rpc(service, name, prototypeOf(input), StringSlots.of(input), WEIGHTS.getOrDefault(name, 1)));
            methods.put(
                    "csi.v1." + service + "/" + name,
                    bytesMethod("csi.v1." + service + "/" + name, method.isServerStreaming()));
        }
        for (String readOnly : READ_ONLY) {
            methods.putIfAbsent(readOnly, bytesMethod(readOnly, false));
        }
    }

    private static Message prototypeOf(Descriptor input) {
        try {
            return (Message) Class.forName("csi.v1.Csi$" + input.getName())
                    .getMethod("getDefaultInstance")
                    .invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no generated class for " + input.getFullName(), e);
        }
    }

    private static MethodDescriptor<byte[], byte[]> bytesMethod(String fullName, boolean streaming) {
        MethodDescriptor<byte[], byte[]> unary = RawRequests.method(fullName);
        return streaming
                ? unary.toBuilder()
                        .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
                        .build()
                : unary;
    }

    private Rpc rpc(String name) {
        return rpcs.stream().filter(r -> r.name().equals(name)).findFirst().orElseThrow();
    }

    /** Sends {@code requests} hostile requests, or fewer if the driver dies or stops answering. */
    void run(int requests) {
        long start = System.nanoTime();
        int probes = 0;
        int reported = 0;
        while (sent < requests && !stopped) {
            int roll = random.nextInt(100);
            if (roll < 10) {
                rawConnection();
            } else if (roll < 20) {
                mutatedBytes();
            } else {
                structured(roll < 27);
            }
            if (sent / 500 > probes) {
                probes++;
                probe();
            }
            if (sent / 1000 > reported) {
                reported++;
                System.out.printf(
                        "fuzz: %d requests, %d violations in %d classes, %d s%n",
                        sent, violations.count(), violations.classCount(), (System.nanoTime() - start) / 1_000_000_000);
            }
        }
    }

    /** A well-formed request, as is ({@code wellFormed}) or with one to three string fields made hostile. */
    private void structured(boolean wellFormed) {
        Rpc rpc = pick();
        StringBuilder about = new StringBuilder();
        Message.Builder builder = templates.template(rpc.name(), about);
        List<String> mutations = wellFormed ? List.of() : mutate(rpc, builder);
        Message request = builder.build();
        if (!pathsStayInside(request)) {
            throw new IllegalStateException(
                    "the test built a request naming a path outside " + tree.root() + ": " + mutations);
        }
        kinds.merge(mutations.isEmpty() ? "well-formed" : "hostile fields", 1, Integer::sum);
        send(
                new Call(
                        rpc,
                        request,
                        null,
                        rpc.name()
                                + (about.isEmpty() ? "" : " of " + about)
                                + (mutations.isEmpty() ? " (well-formed)" : " with " + String.join(", ", mutations))),
                true);
    }

    private List<String> mutate(Rpc rpc, Message.Builder builder) {
        List<String> mutations = new ArrayList<>();
        if (rpc.slots().isEmpty()) {
            return mutations;
        }
        int count = Math.min(rpc.slots().size(), random.nextInt(10) < 7 ? 1 : 2 + random.nextInt(2));
        // The first slot goes round, so that every string field of every method gets its share.
        int cursor = cursors.merge(rpc.name(), 1, Integer::sum) - 1;
        Set<StringSlots.Slot> chosen =
                new LinkedHashSet<>(List.of(rpc.slots().get(cursor % rpc.slots().size())));
        while (chosen.size() < count) {
            chosen.add(rpc.slots().get(random.nextInt(rpc.slots().size())));
        }
        for (StringSlots.Slot slot : chosen) {
            HostileValues.Value value = values.next(slot.kind());
            if (sparesFixtures(rpc.name()) && templates.isFixtureId(value.text())) {
                value = new HostileValues.Value(templates.disposable(), "a disposable volume's ID");
            }
            StringSlots.set(builder, slot, value.text(), values.knownKey(), random);
            slotsFuzzed.add(rpc.name() + " " + slot.name());
            mutations.add(slot.name() + " = " + value.label());
        }
        return mutations;
    }

    /**
     * Whether a fixture's ID must not go into this method: deleting or detaching a fixture
     * would end the deep part of the run, and without CAP_SYS_RESOURCE (as in some containers)
     * resize2fs cannot grow a mounted filesystem, so a grown fixture would fail every later
     * NodeExpandVolume for a reason that is the host's, not the driver's. Disposable volumes
     * stand in.
     */
    private boolean sparesFixtures(String method) {
        return method.equals("DeleteVolume")
                || method.equals("ControllerUnpublishVolume")
                || (method.equals("ControllerExpandVolume") && !CAN_GROW_MOUNTED_FILESYSTEMS);
    }

    /** The bytes of a request broken below the level of its fields, sent as they are. */
    private void mutatedBytes() {
        Rpc rpc = pick();
        StringBuilder about = new StringBuilder();
        Message.Builder builder = templates.template(rpc.name(), about);
        List<String> mutations = random.nextBoolean() ? mutate(rpc, builder) : List.of();
        StringBuilder how = new StringBuilder();
        byte[] bytes = wire.mutate(builder.build().toByteArray(), how);
        Message parsed;
        try {
            parsed = rpc.prototype().getParserForType().parseFrom(bytes);
        } catch (IOException unparsable) {
            parsed = null;
        }
        if (parsed != null && !(pathsStayInside(parsed) && pathsAreKnown(parsed))) {
            kinds.merge("mutated bytes skipped (a path changed into one the test cannot judge)", 1, Integer::sum);
            return;
        }
        kinds.merge("mutated bytes", 1, Integer::sum);
        send(
                new Call(
                        rpc,
                        parsed,
                        bytes,
                        rpc.name() + (about.isEmpty() ? "" : " of " + about)
                                + (mutations.isEmpty() ? "" : " with " + String.join(", ", mutations)) + ", as bytes: "
                                + how),
                true);
    }

    /** A connection on the raw socket: garbage, HTTP/1, or an HTTP/2 exchange cut short. */
    private void rawConnection() {
        RawWire.Attack attack = RawWire.Attack.values()[random.nextInt(RawWire.Attack.values().length)];
        String method = READ_ONLY.get(random.nextInt(READ_ONLY.size()));
        String summary = "raw connection: " + attack + " (" + method + ")";
        kinds.merge("raw " + attack, 1, Integer::sum);
        sent++;
        long start = System.nanoTime();
        try {
            wire.attack(tree.socket(), attack, method, new byte[0]);
        } catch (IOException e) {
            if (driver.isAlive()) {
                violations.add(sent, "no answer", "raw socket", summary, "cannot connect: " + e.getMessage());
            }
        }
        rawNanos += System.nanoTime() - start;
        judgeHost(null, false, summary, Set.of(), Set.of(), Set.of(), null, null);
    }

    private void probe() {
        otherCalls++;
        try {
            boolean ready = IdentityGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
                    .probe(Csi.ProbeRequest.getDefaultInstance())
                    .getReady()
                    .getValue();
            if (!ready) {
                violations.add(
                        sent, "not ready", "Probe", "Probe after request #" + sent, "Probe answered ready=false");
            }
        } catch (StatusRuntimeException e) {
            violations.add(
                    sent,
                    "no answer",
                    "Probe",
                    "Probe after request #" + sent,
                    e.getStatus().toString());
        }
    }

    private Rpc pick() {
        int total = rpcs.stream().mapToInt(Rpc::weight).sum();
        int roll = random.nextInt(total);
        for (Rpc rpc : rpcs) {
            roll -= rpc.weight();
            if (roll < 0) {
                return rpc;
            }
        }
        throw new IllegalStateException();
    }

    /** Sends the call, judges the answer and the host; {@code fuzz} false for the set-up's calls. */
    private void send(Call call, boolean fuzz) {
        Message request = call.request();
        byte[] payload = call.payload() != null ? call.payload() : request.toByteArray();
        Set<Path> named = new HashSet<>();
        Set<Path> legit = new HashSet<>();
        Set<Path> mountPoints = new HashSet<>();
        boolean namesPool = false;
        if (request != null) {
            for (FieldDescriptor field : request.getDescriptorForType().getFields()) {
                if (PATH_FIELDS.contains(field.getName())) {
                    String value = (String) request.getField(field);
                    named.addAll(asTheMountTableListsIt(value));
                    namesPool |= value.startsWith(tree.pool().toString());
                    if (tree.isLegitPath(value)) {
                        legit.add(Path.of(value));
                        boolean mountsThere = request instanceof Csi.NodeStageVolumeRequest
                                ? field.getName().equals("staging_target_path")
                                : request instanceof Csi.NodePublishVolumeRequest
                                        && field.getName().equals("target_path");
                        if (mountsThere) {
                            mountPoints.add(Path.of(value));
                        }
                    }
                }
            }
        }
        legitNamed.addAll(legit);
        TreeSnapshot poolBefore = namesPool ? tree.poolFiles() : null;
        Map<Path, byte[]> recordsBefore = namesPool ? tree.poolMetadata() : null;
        long sending = System.nanoTime();
        Status.Code code;
        String message;
        byte[] response = null;
        MethodDescriptor<byte[], byte[]> descriptor = methods.get(call.rpc().fullName());
        Optional<String> brokenStream = Optional.empty();
        try {
            if (descriptor.getType() == MethodDescriptor.MethodType.SERVER_STREAMING) {
                brokenStream = stream(call, descriptor, payload);
            } else {
                response = ClientCalls.blockingUnaryCall(
                        channel,
                        descriptor,
                        CallOptions.DEFAULT.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS),
                        payload);
            }
            code = Status.Code.OK;
            message = "";
        } catch (StatusRuntimeException e) {
            code = e.getStatus().getCode();
            message = String.valueOf(e.getStatus().getDescription());
        }
        driverNanos += System.nanoTime() - sending;
        methodNanos.merge(call.rpc().name(), System.nanoTime() - sending, Long::sum);
        if (fuzz) {
            sent++;
        } else {
            otherCalls++;
        }
        answers.computeIfAbsent(call.rpc().name(), k -> new EnumMap<>(Status.Code.class))
                .merge(code, 1, Integer::sum);
        String method = call.rpc().name();
        if (code == Status.Code.UNKNOWN || code == Status.Code.INTERNAL) {
            violations.add(sent, code.name(), method, call.summary(), code + ": " + message);
        } else if (code == Status.Code.DEADLINE_EXCEEDED
                || code == Status.Code.UNAVAILABLE
                || code == Status.Code.CANCELLED) {
            violations.add(sent, "no answer", method, call.summary(), code + ": " + message);
            stopped |= ++noAnswerInARow >= 3;
        } else {
            noAnswerInARow = 0;
        }
        if (brokenStream.isPresent()) {
            violations.add(sent, "broken metadata stream", method, call.summary(), brokenStream.get());
        }
        if (JAVA_CLASS.matcher(message).find()) {
            violations.add(sent, "Java class name in the message", method, call.summary(), code + ": " + message);
        }
        if (code == Status.Code.OK && response != null && request != null) {
            try {
                templates.record(method, request, response);
            } catch (Exception e) {
                violations.add(sent, "unparsable response", method, call.summary(), e.getMessage());
            }
        }
        judgeHost(call, code == Status.Code.OK, call.summary(), named, legit, mountPoints, poolBefore, recordsBefore);
    }

    /**
     * A SnapshotMetadata stream, read to its end or, one in four, cancelled after a few messages
     * as a backup tool that stops does; each message judged by the stream's rules. Returns the
     * first rule the stream broke; a status other than OK is thrown, as for a unary call.
     */
    private Optional<String> stream(Call call, MethodDescriptor<byte[], byte[]> descriptor, byte[] payload) {
        int cancelAfter = random.nextInt(4) == 0 ? random.nextInt(3) : Integer.MAX_VALUE;
        Optional<StreamRules> rules = StreamRules.of(call.request());
        Context.CancellableContext context = Context.current().withCancellation();
        Context previous = context.attach();
        try {
            Iterator<byte[]> messages = ClientCalls.blockingServerStreamingCall(
                    channel,
                    descriptor,
                    CallOptions.DEFAULT.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS),
                    payload);
            for (int read = 0; read < cancelAfter && messages.hasNext(); read++) {
                byte[] next = messages.next();
                Optional<String> broken = rules.flatMap(r -> r.broken(call.rpc().name(), next));
                if (broken.isPresent()) {
                    return broken;
                }
            }
            if (cancelAfter != Integer.MAX_VALUE) {
                kinds.merge("streams cancelled early", 1, Integer::sum);
            }
            return Optional.empty();
        } finally {
            context.detach(previous);
            context.cancel(null); // a stream left unread (or cancelled early) ends here
        }
    }

    /**
     * After every request: the driver is alive; new mounts are at legit paths this request
     * asked to mount, and it succeeded; mounts gone were at paths it named; a refused request
     * left the loop devices alone; nothing outside changed; in the scratch tree only the legit
     * paths it named changed; a request naming a path in the pool did not change the pool.
     */
    private void judgeHost(
            Call call,
            boolean ok,
            String summary,
            Set<Path> named,
            Set<Path> legit,
            Set<Path> mountPoints,
            TreeSnapshot poolBefore,
            Map<Path, byte[]> recordsBefore) {
        long judging = System.nanoTime();
        try {
            judgeHostNow(call, ok, summary, named, legit, mountPoints, poolBefore, recordsBefore);
        } finally {
            checkNanos += System.nanoTime() - judging;
        }
    }

    private void judgeHostNow(
            Call call,
            boolean ok,
            String summary,
            Set<Path> named,
            Set<Path> legit,
            Set<Path> mountPoints,
            TreeSnapshot poolBefore,
            Map<Path, byte[]> recordsBefore) {
        String method = call == null ? "raw socket" : call.rpc().name();
        if (!driver.isAlive()) {
            violations.add(sent, "driver died", method, summary, "the driver process exited; see its log");
            stopped = true;
            return;
        }
        Map<Integer, HostView.Mount> mounts = ownMounts();
        List<HostView.Mount> strays = new ArrayList<>();
        for (HostView.Mount mount : mounts.values()) {
            if (lastMounts.containsKey(mount.id())) {
                continue;
            }
            if (ok && mountPoints.contains(mount.mountPoint())) {
                legitMounted.add(mount.mountPoint());
            } else {
                strays.add(mount);
                violations.add(
                        sent,
                        "mount outside the requested paths",
                        method,
                        summary,
                        "mounted " + mount + (ok ? "" : " although the request failed"));
            }
        }
        for (HostView.Mount gone : lastMounts.values()) {
            if (!mounts.containsKey(gone.id()) && !named.contains(gone.mountPoint())) {
                violations.add(sent, "unmounted what the request did not name", method, summary, "unmounted " + gone);
            }
        }
        Set<String> loops = loops();
        if (!ok && call != null && !loops.equals(lastLoops)) {
            Set<String> added = new LinkedHashSet<>(loops);
            added.removeAll(lastLoops);
            Set<String> removed = new LinkedHashSet<>(lastLoops);
            removed.removeAll(loops);
            violations.add(
                    sent,
                    "a refused request changed loop devices",
                    method,
                    summary,
                    "attached " + added + ", detached " + removed);
        }
        if (!strays.isEmpty()) {
            undo(strays);
            mounts = ownMounts();
            loops = loops();
            // Undone: what the request staged or published there is not for the teardown to take down.
            switch (call == null ? null : call.request()) {
                case Csi.NodeStageVolumeRequest r ->
                    templates.staged.remove(new Templates.Placement(r.getVolumeId(), r.getStagingTargetPath()));
                case Csi.NodePublishVolumeRequest r ->
                    templates.published.remove(new Templates.Placement(r.getVolumeId(), r.getTargetPath()));
                case null, default -> {}
            }
        }
        // No check that DeleteVolume spares a volume staged on this node: once a ControllerUnpublish
        // (hostile ones included) has said the volume is detached, the controller takes the CO's
        // word, as the spec has it; with a pool shared by many nodes it cannot see their devices.
        lastMounts = mounts;
        lastLoops = loops;

        TreeSnapshot outside = tree.outside();
        List<TreeSnapshot.Change> changes = outsideLast.changesTo(outside);
        if (!changes.isEmpty()) {
            violations.add(sent, "changed outside the pool and the scratch dirs", method, summary, describe(changes));
            tree.repairOutside(changes.stream()
                    .filter(c -> c.before() == null)
                    .map(TreeSnapshot.Change::path)
                    .toList());
            outside = tree.outside();
        }
        outsideLast = outside;

        TreeSnapshot scratch = tree.scratch();
        List<TreeSnapshot.Change> unasked = scratchLast.changesTo(scratch).stream()
                .filter(c -> !allowed(c, legit))
                .toList();
        if (!unasked.isEmpty()) {
            violations.add(
                    sent, "changed the kubelet tree outside the requested paths", method, summary, describe(unasked));
            tree.repairScratch(unasked.stream()
                    .filter(c -> c.before() == null)
                    .map(TreeSnapshot.Change::path)
                    .toList());
            scratch = tree.scratch();
        }
        scratchLast = scratch;

        if (poolBefore != null) {
            List<TreeSnapshot.Change> poolChanges = poolBefore.changesTo(tree.poolFiles());
            if (!poolChanges.isEmpty()) {
                violations.add(sent, "changed the pool through a path in it", method, summary, describe(poolChanges));
                tree.repairPool(poolChanges, recordsBefore);
            }
        }
    }

    /** A change in the scratch tree is fine at or below a legit path the request named, or as a new parent of one. */
    private boolean allowed(TreeSnapshot.Change change, Set<Path> legit) {
        Path path = change.path();
        return legit.stream()
                .anyMatch(l -> path.startsWith(l)
                        || (change.before() == null && l.startsWith(path) && path.startsWith(tree.kubelet())));
    }

    /**
     * Takes away mounts that should not be there, so the sentinel can be put back and later
     * requests judged on their own; a filesystem mounted straight from one of the pool's loop
     * devices that nothing else uses then has its device detached too.
     */
    private void undo(List<HostView.Mount> strays) {
        for (HostView.Mount stray : strays) {
            HostView.unmount(stray.mountPoint());
        }
        Set<String> stillUsed =
                HostView.mounts().stream().map(HostView.Mount::source).collect(Collectors.toSet());
        Set<String> poolDevices =
                host.poolLoops().stream().map(HostView.Loop::device).collect(Collectors.toSet());
        for (HostView.Mount stray : strays) {
            if (!stray.fsType().equals("devtmpfs")
                    && poolDevices.contains(stray.source())
                    && !stillUsed.contains(stray.source())) {
                detachSoon(stray.source());
            }
        }
    }

    /** A lazily unmounted filesystem lets go of its device a moment later; detaching before that only marks it. */
    private void detachSoon(String device) {
        for (int attempt = 0; attempt < 20; attempt++) {
            HostView.detach(device);
            if (host.poolLoops().stream().noneMatch(l -> l.device().equals(device))) {
                return;
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        System.out.println("fuzz: note: " + device + " stays attached after its stray mount was removed");
    }

    private Map<Integer, HostView.Mount> ownMounts() {
        return host.ownMounts().stream()
                .collect(Collectors.toMap(HostView.Mount::id, m -> m, (a, b) -> a, TreeMap::new));
    }

    private Set<String> loops() {
        return host.poolLoops().stream()
                .map(l -> l.device() + " on " + l.backingFile().getFileName())
                .collect(Collectors.toCollection(java.util.TreeSet::new));
    }

    private static String describe(List<TreeSnapshot.Change> changes) {
        return changes.stream().limit(6).map(Object::toString).collect(Collectors.joining("; "))
                + (changes.size() > 6 ? "; and " + (changes.size() - 6) + " more" : "");
    }

    /** A path as the kernel would list a mount at it: normalized, its parent's symlinks resolved. */
    private static Set<Path> asTheMountTableListsIt(String value) {
        Set<Path> paths = new HashSet<>();
        try {
            Path path = Path.of(value);
            if (!path.isAbsolute()) {
                return paths;
            }
            paths.add(path.normalize());
            if (path.getParent() != null && path.getFileName() != null) {
                paths.add(path.getParent()
                        .toRealPath()
                        .resolve(path.getFileName())
                        .normalize());
            }
        } catch (InvalidPathException | IOException e) {
            // no such path: nothing can be mounted there
        }
        return paths;
    }

    /**
     * Whether every absolute path anywhere in the request (a field, or inside a value such as
     * "loop=/..." or "$(touch /...)") lies below the test's root. The test must never make the
     * driver mount or delete on the host.
     */
    private boolean pathsStayInside(Message message) {
        for (Map.Entry<FieldDescriptor, Object> field : message.getAllFields().entrySet()) {
            List<?> items = field.getKey().isRepeated() ? (List<?>) field.getValue() : List.of(field.getValue());
            for (Object item : items) {
                if (item instanceof String text && !stringStaysInside(text)) {
                    return false;
                }
                if (item instanceof Message nested && !pathsStayInside(nested)) {
                    return false;
                }
            }
        }
        return true;
    }

    private boolean stringStaysInside(String text) {
        for (int i = 0; i < text.length(); i++) {
            if (text.charAt(i) != '/' || (i > 0 && isPathCharacter(text.charAt(i - 1)))) {
                continue;
            }
            int end = i;
            while (end < text.length() && !isDelimiter(text.charAt(end))) {
                end++;
            }
            try {
                if (!Path.of(text.substring(i, end)).normalize().startsWith(tree.root())) {
                    return false;
                }
            } catch (InvalidPathException e) {
                return false;
            }
            i = end;
        }
        return true;
    }

    private static boolean isPathCharacter(char c) {
        return Character.isLetterOrDigit(c) || "._-~+".indexOf(c) >= 0;
    }

    private static boolean isDelimiter(char c) {
        return Character.isWhitespace(c) || c < 0x20 || ",;=:'\"`$()|".indexOf(c) >= 0;
    }

    /**
     * Whether a request rebuilt from mutated bytes names only paths the test can judge: a flipped
     * bit may turn a legit path into a new one below the kubelet tree, where a mount would be
     * neither legit nor the driver's fault.
     */
    private boolean pathsAreKnown(Message request) {
        for (FieldDescriptor field : request.getDescriptorForType().getFields()) {
            if (PATH_FIELDS.contains(field.getName())) {
                String value = (String) request.getField(field);
                if (value.startsWith("/") && !tree.isLegitPath(value) && !tree.isHostilePath(value)) {
                    return false;
                }
            }
        }
        return true;
    }

    /** The driver is up and ready, and the fixtures are still there. */
    void checkAlive() {
        if (!driver.isAlive()) {
            violations.add(sent, "driver died", "-", "end of the run", "the driver process is gone");
            return;
        }
        probe();
        var controller = ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
        for (Templates.Fixture f : templates.fixtures) {
            otherCalls++;
            try {
                controller.controllerGetVolume(Csi.ControllerGetVolumeRequest.newBuilder()
                        .setVolumeId(f.id())
                        .build());
            } catch (StatusRuntimeException e) {
                violations.add(
                        sent,
                        "fixture lost",
                        "ControllerGetVolume",
                        "ControllerGetVolume of " + f.name(),
                        e.getStatus().toString());
            }
        }
        for (HostView.Mount mount : ownMounts().values()) {
            if (!legitMounted.contains(mount.mountPoint())) {
                violations.add(
                        sent, "mount outside the requested paths", "-", "end of the run", "still mounted: " + mount);
            }
        }
        List<String> held = snapshotImagesHeldOnceSettled();
        if (!held.isEmpty()) {
            violations.add(
                    sent,
                    "snapshot image left open",
                    "-",
                    "end of the run",
                    "every SnapshotMetadata stream has ended, yet the driver holds " + held);
        }
    }

    /**
     * The snapshot images the driver holds open, once none or after 10 s: a cancelled stream
     * lets go of them a moment after its client has gone on.
     */
    private List<String> snapshotImagesHeldOnceSettled() {
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<String> held = snapshotImagesHeld();
        while (!held.isEmpty() && System.nanoTime() < giveUp) {
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            held = snapshotImagesHeld();
        }
        return held;
    }

    private List<String> snapshotImagesHeld() {
        Path fds = Path.of("/proc", Long.toString(driver.handle().pid()), "fd");
        List<String> held = new ArrayList<>();
        try (var entries = Files.list(fds)) {
            for (Path fd : entries.toList()) {
                try {
                    Path file = Files.readSymbolicLink(fd);
                    if (file.startsWith(tree.pool())
                            && file.getFileName().toString().startsWith("snap-")) {
                        held.add(file.getFileName().toString());
                    }
                } catch (IOException closedMeanwhile) {
                    // not open any more
                }
            }
        } catch (IOException e) {
            held.add("(cannot list " + fds + ": " + e.getMessage() + ")");
        }
        return held;
    }

    /**
     * Takes everything down through the driver, as a CO would: unpublishes at legit paths (a
     * publish that wrongly succeeded at a hostile path was already undone, and an unpublish
     * there would let the driver delete the test's files) and unstages what it confirmed, then
     * detaches and deletes every snapshot and volume. Every answer but OK is a violation.
     */
    void tearDown() {
        List<Templates.Placement> published = new ArrayList<>(templates.published);
        for (Templates.Placement p : published.reversed()) {
            if (tree.isLegitPath(p.path())) {
                teardownCall(
                        "NodeUnpublishVolume",
                        Csi.NodeUnpublishVolumeRequest.newBuilder()
                                .setVolumeId(p.volumeId())
                                .setTargetPath(p.path())
                                .build());
            }
        }
        // A block volume staged with a hostile staging path mounted nothing there: unstaging it with that
        // path, as a CO would, is the only way to have the driver detach its loop device.
        List<Templates.Placement> staged = new ArrayList<>(templates.staged);
        for (Templates.Placement s : staged.reversed()) {
            teardownCall(
                    "NodeUnstageVolume",
                    Csi.NodeUnstageVolumeRequest.newBuilder()
                            .setVolumeId(s.volumeId())
                            .setStagingTargetPath(s.path())
                            .build());
        }
        var controller = ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
        for (int round = 0; round < 2; round++) {
            otherCalls++;
            // A member of a group snapshot goes with its group, as a CO deletes it.
            Map<String, List<String>> groups = new TreeMap<>();
            for (var entry : controller
                    .listSnapshots(Csi.ListSnapshotsRequest.getDefaultInstance())
                    .getEntriesList()) {
                Csi.Snapshot snapshot = entry.getSnapshot();
                if (snapshot.getGroupSnapshotId().isEmpty()) {
                    teardownCall(
                            "DeleteSnapshot",
                            Csi.DeleteSnapshotRequest.newBuilder()
                                    .setSnapshotId(snapshot.getSnapshotId())
                                    .build());
                } else {
                    groups.computeIfAbsent(snapshot.getGroupSnapshotId(), g -> new ArrayList<>())
                            .add(snapshot.getSnapshotId());
                }
            }
            groups.forEach((group, members) -> teardownCall(
                    "DeleteVolumeGroupSnapshot",
                    Csi.DeleteVolumeGroupSnapshotRequest.newBuilder()
                            .setGroupSnapshotId(group)
                            .addAllSnapshotIds(members)
                            .build()));
            otherCalls++;
            for (var entry : controller
                    .listVolumes(Csi.ListVolumesRequest.getDefaultInstance())
                    .getEntriesList()) {
                String id = entry.getVolume().getVolumeId();
                teardownCall(
                        "ControllerUnpublishVolume",
                        Csi.ControllerUnpublishVolumeRequest.newBuilder()
                                .setVolumeId(id)
                                .build());
                teardownCall(
                        "DeleteVolume",
                        Csi.DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
            }
        }
    }

    private void teardownCall(String name, Message request) {
        Rpc rpc = rpc(name);
        otherCalls++;
        try {
            ClientCalls.blockingUnaryCall(
                    channel,
                    methods.get(rpc.fullName()),
                    CallOptions.DEFAULT.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS),
                    request.toByteArray());
        } catch (StatusRuntimeException e) {
            violations.add(
                    sent,
                    "teardown refused",
                    name,
                    "teardown: " + name + " " + shortText(request),
                    e.getStatus().getCode() + ": " + e.getStatus().getDescription());
        }
    }

    private static String shortText(Message request) {
        return request.toString().replace('\n', ' ').strip();
    }

    /** After the teardown: no mount and no loop device of the test left, and the trees as they were. */
    void checkNothingLeft() {
        for (HostView.Mount mount : host.ownMounts()) {
            violations.add(sent, "left after teardown", "-", "end of the run", "still mounted: " + mount);
        }
        for (HostView.Loop loop : host.poolLoops()) {
            violations.add(
                    sent,
                    "left after teardown",
                    "-",
                    "end of the run",
                    "loop device " + loop.device() + " still attached to " + loop.backingFile());
        }
        List<TreeSnapshot.Change> outside = outsideOriginal.changesTo(tree.outside());
        if (!outside.isEmpty()) {
            violations.add(
                    sent, "changed outside the pool and the scratch dirs", "-", "end of the run", describe(outside));
        }
        List<TreeSnapshot.Change> scratch = scratchOriginal.changesTo(tree.scratch()).stream()
                .filter(c -> !allowed(c, legitNamed))
                .toList();
        if (!scratch.isEmpty()) {
            violations.add(
                    sent,
                    "changed the kubelet tree outside the requested paths",
                    "-",
                    "end of the run",
                    describe(scratch));
        }
    }

    /** How the run went: what was sent, how each method answered, which string fields got hostile values. */
    String statistics() {
        int slots = rpcs.stream().mapToInt(r -> r.slots().size()).sum();
        StringBuilder out = new StringBuilder("fuzz: sent by kind: " + kinds + "\n");
        out.append("fuzz: %d s waiting for gRPC answers, %d s on raw connections, %d s checking the host%n"
                .formatted(driverNanos / 1_000_000_000, rawNanos / 1_000_000_000, checkNanos / 1_000_000_000));
        out.append("fuzz: %d of %d string fields of %d methods got hostile values%n"
                .formatted(slotsFuzzed.size(), slots, rpcs.size()));
        answers.forEach((method, codes) -> out.append(
                "fuzz:   %s %s, %d ms%n".formatted(method, codes, methodNanos.getOrDefault(method, 0L) / 1_000_000)));
        return out.toString();
    }

    /** The string fields no hostile value reached (empty after a full run: the slots go round). */
    List<String> slotsNotFuzzed() {
        List<String> missing = new ArrayList<>();
        for (Rpc rpc : rpcs) {
            for (StringSlots.Slot slot : rpc.slots()) {
                if (!slotsFuzzed.contains(rpc.name() + " " + slot.name())) {
                    missing.add(rpc.name() + " " + slot.name());
                }
            }
        }
        return missing;
    }
}
