package dev.blockpool.driver.server;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.MapEntry;
import com.google.protobuf.Message;
import csi.v1.Csi;
import java.util.ArrayList;
import java.util.List;

/**
 * Copies a request or response for logging with every field the CSI spec marks
 * {@code csi_secret} masked. The marking is read from the descriptor, so a secret field added in
 * a later spec version is masked without a change here.
 */
final class SecretRedactor {

    static final String MASK = "***stripped***";

    private SecretRedactor() {}

    static Message redact(Message message) {
        Message.Builder builder = message.toBuilder();
        for (FieldDescriptor field : message.getDescriptorForType().getFields()) {
            if (isSecret(field)) {
                mask(message, builder, field);
            } else if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE && !field.isMapField()) {
                redactNested(message, builder, field);
            }
        }
        return builder.build();
    }

    static boolean isSecret(FieldDescriptor field) {
        return field.getOptions().getExtension(Csi.csiSecret);
    }

    private static void mask(Message message, Message.Builder builder, FieldDescriptor field) {
        if (field.isMapField()) {
            // Keep the keys (which secrets were passed is useful), drop the values.
            builder.clearField(field);
            for (Object entry : (List<?>) message.getField(field)) {
                MapEntry<?, ?> mapEntry = (MapEntry<?, ?>) entry;
                Message.Builder masked = mapEntry.toBuilder();
                FieldDescriptor value = mapEntry.getDescriptorForType().findFieldByName("value");
                if (value.getJavaType() == FieldDescriptor.JavaType.STRING) {
                    masked.setField(value, MASK);
                } else {
                    masked.clearField(value);
                }
                builder.addRepeatedField(field, masked.build());
            }
        } else if (field.isRepeated() || field.getJavaType() != FieldDescriptor.JavaType.STRING) {
            builder.clearField(field);
        } else if (message.hasField(field) || !((String) message.getField(field)).isEmpty()) {
            builder.setField(field, MASK);
        }
    }

    private static void redactNested(Message message, Message.Builder builder, FieldDescriptor field) {
        if (field.isRepeated()) {
            List<Object> redacted = new ArrayList<>();
            for (Object element : (List<?>) message.getField(field)) {
                redacted.add(redact((Message) element));
            }
            builder.setField(field, redacted);
        } else if (message.hasField(field)) {
            builder.setField(field, redact((Message) message.getField(field)));
        }
    }
}
