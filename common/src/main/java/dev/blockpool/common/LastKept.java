package dev.blockpool.common;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A map of what was found before, for a look that would otherwise search again: it keeps the
 * {@code kept} entries used last and forgets the others, and may be used from any thread. What it
 * holds is a hint, to be checked against the host before it is relied on.
 */
public final class LastKept {

    private LastKept() {}

    public static <K, V> Map<K, V> map(int kept) {
        return Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
                return size() > kept;
            }
        });
    }
}
