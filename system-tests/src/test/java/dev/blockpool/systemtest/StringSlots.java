package dev.blockpool.systemtest;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Every place a string goes in a request type, found through the protobuf descriptors so that
 * no field is forgotten (and a field a newer spec adds is fuzzed without a change here): plain
 * and repeated string fields, map keys and values, at any depth of nested messages.
 */
final class StringSlots {

    enum Shape {
        SINGLE,
        REPEATED,
        MAP_KEY,
        MAP_VALUE
    }

    /** A string field reached through {@code path} (message fields) from the request. */
    record Slot(List<FieldDescriptor> path, FieldDescriptor field, Shape shape) {

        String name() {
            StringBuilder name = new StringBuilder();
            for (FieldDescriptor step : path) {
                name.append(step.getName()).append(step.isRepeated() ? "[]." : ".");
            }
            name.append(field.getName());
            return name
                    + switch (shape) {
                        case SINGLE -> "";
                        case REPEATED -> "[]";
                        case MAP_KEY -> "{key}";
                        case MAP_VALUE -> "{value}";
                    };
        }

        HostileValues.Kind kind() {
            String name = field.getName();
            if (shape == Shape.MAP_KEY) {
                return HostileValues.Kind.MAP_KEY;
            }
            if (name.endsWith("path")) {
                return HostileValues.Kind.PATH;
            }
            if (name.endsWith("_id") || name.equals("name") || name.endsWith("token")) {
                return HostileValues.Kind.ID;
            }
            if (name.equals("fs_type")) {
                return HostileValues.Kind.FS_TYPE;
            }
            if (name.equals("mount_flags")) {
                return HostileValues.Kind.MOUNT_FLAG;
            }
            return HostileValues.Kind.OTHER;
        }
    }

    private StringSlots() {}

    static List<Slot> of(Descriptor type) {
        List<Slot> slots = new ArrayList<>();
        collect(type, new ArrayList<>(), slots);
        return slots;
    }

    private static void collect(Descriptor type, List<FieldDescriptor> path, List<Slot> slots) {
        for (FieldDescriptor field : type.getFields()) {
            if (field.getJavaType() == FieldDescriptor.JavaType.STRING) {
                slots.add(new Slot(List.copyOf(path), field, field.isRepeated() ? Shape.REPEATED : Shape.SINGLE));
            } else if (field.isMapField()) {
                Descriptor entry = field.getMessageType();
                if (entry.findFieldByName("key").getJavaType() == FieldDescriptor.JavaType.STRING) {
                    slots.add(new Slot(List.copyOf(path), field, Shape.MAP_KEY));
                }
                if (entry.findFieldByName("value").getJavaType() == FieldDescriptor.JavaType.STRING) {
                    slots.add(new Slot(List.copyOf(path), field, Shape.MAP_VALUE));
                }
            } else if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE
                    && path.size() < 5
                    && path.stream().noneMatch(step -> step.getMessageType() == field.getMessageType())) {
                path.add(field);
                collect(field.getMessageType(), path, slots);
                path.removeLast();
            }
        }
    }

    /**
     * Puts {@code value} into the slot: a plain field is replaced, a repeated field gets it as
     * an element, a map gets an entry with it as key (and a harmless value) or as the value of
     * a well-known key. Nested messages on the way are created when absent.
     */
    static void set(Message.Builder request, Slot slot, String value, String mapKey, Random random) {
        Message.Builder builder = request;
        for (FieldDescriptor step : slot.path()) {
            builder = descend(builder, step, random);
        }
        FieldDescriptor field = slot.field();
        switch (slot.shape()) {
            case SINGLE -> builder.setField(field, value);
            case REPEATED -> {
                int count = builder.getRepeatedFieldCount(field);
                if (count > 0 && random.nextBoolean()) {
                    builder.setRepeatedField(field, random.nextInt(count), value);
                } else {
                    builder.addRepeatedField(field, value);
                }
            }
            case MAP_KEY, MAP_VALUE -> {
                Message.Builder entry = builder.newBuilderForField(field);
                Descriptor type = field.getMessageType();
                boolean key = slot.shape() == Shape.MAP_KEY;
                entry.setField(type.findFieldByName("key"), key ? value : mapKey);
                entry.setField(type.findFieldByName("value"), key ? "true" : value);
                builder.addRepeatedField(field, entry.build());
            }
        }
    }

    private static Message.Builder descend(Message.Builder builder, FieldDescriptor field, Random random) {
        if (!field.isRepeated()) {
            return builder.getFieldBuilder(field);
        }
        int count = builder.getRepeatedFieldCount(field);
        if (count == 0 || random.nextInt(4) == 0) {
            builder.addRepeatedField(field, builder.newBuilderForField(field).build());
            count++;
        }
        return builder.getRepeatedFieldBuilder(field, random.nextInt(count));
    }
}
