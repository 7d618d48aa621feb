package switchboard.peers.apps;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The JSON the apps read and write. Output is built by hand so it is
 * byte for byte Switchboard's: compact, keys in Switchboard's order, raw UTF-8,
 * and serde_json's escapes (\" \\ \b \f \n \r \t, other controls as backslash-u00xx).
 */
public final class Json {
    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private Json() {}

    /** The JSON string literal of s. */
    public static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2);
        quote(b, s);
        return b.toString();
    }

    public static void quote(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\b' -> b.append("\\b");
                case '\f' -> b.append("\\f");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
                }
            }
        }
        b.append('"');
    }

    public static String error(String message) {
        return "{\"error\":" + quote(message) + "}";
    }

    /** text parsed as an object with exactly the given keys, or null. */
    public static JsonNode strictObject(String text, String... keys) {
        JsonNode v;
        try {
            v = MAPPER.readTree(text);
        } catch (Exception e) {
            return null;
        }
        if (v == null || !v.isObject() || v.size() != keys.length) return null;
        for (String k : keys) if (!v.has(k)) return null;
        return v;
    }

    /** The string value of v[key], or null when it is not a string. */
    public static String string(JsonNode v, String key) {
        JsonNode f = v.get(key);
        return f != null && f.isTextual() ? f.textValue() : null;
    }

}
