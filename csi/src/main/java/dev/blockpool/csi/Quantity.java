package dev.blockpool.csi;

import dev.blockpool.common.Quoting;
import java.math.BigInteger;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A size as Kubernetes writes it ("1Gi", "500M", "1073741824"), in bytes. */
public final class Quantity {

    private static final Pattern SIZE = Pattern.compile("([0-9]+)([KMGTP]i?|k)?");
    private static final Map<String, Long> UNITS = Map.ofEntries(
            Map.entry("k", 1_000L),
            Map.entry("K", 1_000L),
            Map.entry("M", 1_000_000L),
            Map.entry("G", 1_000_000_000L),
            Map.entry("T", 1_000_000_000_000L),
            Map.entry("P", 1_000_000_000_000_000L),
            Map.entry("Ki", 1L << 10),
            Map.entry("Mi", 1L << 20),
            Map.entry("Gi", 1L << 30),
            Map.entry("Ti", 1L << 40),
            Map.entry("Pi", 1L << 50));

    private Quantity() {}

    public static long parseBytes(String key, String text) {
        BigInteger bytes = exactBytes(key, text);
        if (bytes.bitLength() > 63) {
            throw CsiException.outOfRange("%s %s is too large", key, Quoting.quote(text));
        }
        return bytes.longValue();
    }

    /**
     * Like {@link #parseBytes}, but a size above {@code max} is INVALID_ARGUMENT, saying why it
     * is the most ({@code why}): for a parameter, where such a size is a mistake in the class
     * rather than more than the driver can hold.
     */
    public static long parseBytesAtMost(String key, String text, long max, String why) {
        BigInteger bytes = exactBytes(key, text);
        if (bytes.compareTo(BigInteger.valueOf(max)) > 0) {
            throw CsiException.invalidArgument("%s %s is more than %d, %s", key, Quoting.quote(text), max, why);
        }
        return bytes.longValue();
    }

    /** The bytes {@code text} says, however many; INVALID_ARGUMENT when it is no size. */
    private static BigInteger exactBytes(String key, String text) {
        Matcher m = SIZE.matcher(text.strip());
        if (!m.matches()) {
            throw CsiException.invalidArgument(
                    "%s %s is not a size such as 1Gi, 512Mi or 1073741824", key, Quoting.quote(text));
        }
        BigInteger value = new BigInteger(m.group(1));
        return m.group(2) == null ? value : value.multiply(BigInteger.valueOf(UNITS.get(m.group(2))));
    }
}
