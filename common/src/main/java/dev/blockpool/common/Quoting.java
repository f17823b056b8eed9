package dev.blockpool.common;

/** How a value from a request appears in an error message: quoted, cut short, control characters visible. */
public final class Quoting {

    private static final int MAX_SHOWN = 80;

    private Quoting() {}

    public static String quote(String value) {
        StringBuilder out = new StringBuilder("\"");
        value.codePoints().limit(MAX_SHOWN).forEach(c -> {
            if (c < 0x20 || c == 0x7f) {
                out.append("\\x%02x".formatted(c));
            } else {
                out.appendCodePoint(c);
            }
        });
        return out.append(value.codePointCount(0, value.length()) > MAX_SHOWN ? "...\"" : "\"")
                .toString();
    }
}
