package dev.blockpool.flexvolume;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import dev.blockpool.common.FsType;
import dev.blockpool.common.Quoting;
import dev.blockpool.pool.Ids;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * The options kubelet passes to {@code mount}: one JSON object of strings, the PV's
 * {@code flexVolume.options} merged with what kubelet adds under {@code kubernetes.io/} (the PV's
 * fsType and readOnly as {@code kubernetes.io/fsType} and {@code kubernetes.io/readwrite}, the
 * pod's name, namespace, UID and service account, the volume's name, the pod's fsGroup and the
 * PV's secret as {@code kubernetes.io/secret/*}). Of kubelet's keys only fsType and readwrite
 * matter here; the others, a secret included, are accepted and never repeated. The only option
 * of blockpool's own is {@code volumeID}; any other is a mistake in the PV, refused by name.
 *
 * @param fsType empty when the PV names none: the node then mounts the filesystem the volume was
 *               created with
 */
record FlexOptions(String volumeId, Optional<FsType> fsType, boolean readOnly) {

    static final String VOLUME_ID = "volumeID";
    static final String KUBELET_PREFIX = "kubernetes.io/";
    static final String FS_TYPE = "kubernetes.io/fsType";
    static final String READ_WRITE = "kubernetes.io/readwrite";

    private static final JsonFactory JSON = new JsonFactory().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    /** A Failure's message for what is not a JSON object of strings, or options that name no usable volume. */
    static FlexOptions parse(String json) {
        return of(parseObject(json));
    }

    static FlexOptions of(Map<String, String> options) {
        TreeSet<String> unknown = new TreeSet<>();
        for (String key : options.keySet()) {
            if (!key.equals(VOLUME_ID) && !key.startsWith(KUBELET_PREFIX)) {
                unknown.add(key);
            }
        }
        if (!unknown.isEmpty()) {
            throw new FlexFailure(
                    "unknown option%s %s in the volume's flexVolume.options: blockpool's only option is %s",
                    unknown.size() > 1 ? "s" : "",
                    String.join(", ", unknown.stream().map(Quoting::quote).toList()),
                    VOLUME_ID);
        }
        String volumeId = options.get(VOLUME_ID);
        if (volumeId == null || volumeId.isEmpty()) {
            throw new FlexFailure(
                    "the volume's flexVolume.options has no %s: set it to the ID CreateVolume returned "
                            + "(vol- and 32 hex digits)",
                    VOLUME_ID);
        }
        if (!Ids.isVolumeId(volumeId)) {
            throw new FlexFailure(
                    "%s %s is not a blockpool volume ID: it is vol- and 32 hex digits, as CreateVolume " + "returns it",
                    VOLUME_ID, Quoting.quote(volumeId));
        }
        String fsType = options.getOrDefault(FS_TYPE, "");
        if (!fsType.isEmpty() && FsType.find(fsType).isEmpty()) {
            throw new FlexFailure(
                    "fsType %s is not supported: use %s, or leave it out for the volume's own",
                    Quoting.quote(fsType), FsType.supported());
        }
        String readWrite = options.getOrDefault(READ_WRITE, "rw");
        if (!readWrite.equals("rw") && !readWrite.equals("ro")) {
            throw new FlexFailure("%s is %s; kubelet passes rw or ro", READ_WRITE, Quoting.quote(readWrite));
        }
        return new FlexOptions(volumeId, FsType.find(fsType), readWrite.equals("ro"));
    }

    private static Map<String, String> parseObject(String json) {
        Map<String, String> options = new LinkedHashMap<>();
        try (JsonParser parser = JSON.createParser(json)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                throw notAnObject();
            }
            for (JsonToken token = parser.nextToken(); token != JsonToken.END_OBJECT; token = parser.nextToken()) {
                String key = parser.currentName();
                if (parser.nextToken() != JsonToken.VALUE_STRING) {
                    // Not echoed: the value could be a secret.
                    throw new FlexFailure(
                            "option %s is not a string; FlexVolume options are strings", Quoting.quote(key));
                }
                options.put(key, parser.getText());
            }
            if (parser.nextToken() != null) {
                throw notAnObject();
            }
        } catch (JsonProcessingException e) {
            // Where, not the parser's words: they quote the input, and a secret may be in it.
            throw new FlexFailure(
                    "the options are not valid JSON (at character %d); kubelet passes one JSON object",
                    e.getLocation() == null ? 0 : e.getLocation().getCharOffset() + 1);
        } catch (IOException e) {
            throw new FlexFailure("cannot read the options: %s", e.getMessage());
        }
        return options;
    }

    private static FlexFailure notAnObject() {
        return new FlexFailure(
                "the options are not one JSON object of strings; kubelet passes one, e.g. {\"%s\":\"vol-...\"}",
                VOLUME_ID);
    }
}
