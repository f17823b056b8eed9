package dev.blockpool.pool.extents;

import dev.blockpool.pool.extents.ImageExtents.Extent;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * Which ranges of a window two images may differ in, judged from their extents alone. Where both
 * hold data stored at the same physical place, they share that extent (a reflink) and hold the
 * same bytes; where neither holds data (a hole, or an extent allocated but never written), both
 * read zeros. Everywhere else they may differ: a range whose data moved, and a hole that became
 * data or data that became a hole.
 *
 * <p>Whether such a range has changed is then decided by how the images were made. Where they
 * share extents, the range was written since the base was taken (a copy-on-write gave it new
 * extents): it is reported as it is, without reading a byte. Where they share none (a filesystem
 * without reflinks, or a region rewritten as a whole since), the bytes are compared.
 */
final class ExtentComparison {

    private ExtentComparison() {}

    /** A range the images may differ in, and whether its bytes must be compared to tell. */
    record Piece(ByteRange range, boolean compare) {}

    /**
     * The ranges of {@code [from, to)} in which {@code target} may differ from {@code base}, in
     * order and coalesced; both lists in order of their logical offsets, covering the window.
     */
    static List<Piece> differences(long from, long to, List<Extent> base, List<Extent> target) {
        boolean sharing = base.stream().anyMatch(ExtentComparison::sharedPlace)
                || target.stream().anyMatch(ExtentComparison::sharedPlace);
        TreeSet<Long> edges = new TreeSet<>(List.of(from, to));
        addEdges(edges, from, to, base);
        addEdges(edges, from, to, target);
        List<Piece> pieces = new ArrayList<>();
        int inBase = 0;
        int inTarget = 0;
        long start = -1; // where the current run of differing intervals began
        Long previous = null;
        for (long edge : edges) {
            if (previous != null) {
                long at = previous;
                while (inBase < base.size() && base.get(inBase).end() <= at) {
                    inBase++;
                }
                while (inTarget < target.size() && target.get(inTarget).end() <= at) {
                    inTarget++;
                }
                boolean differs = differsAt(at, dataAt(at, base, inBase), dataAt(at, target, inTarget));
                if (differs && start < 0) {
                    start = at;
                } else if (!differs && start >= 0) {
                    pieces.add(new Piece(ByteRange.between(start, at), !sharing));
                    start = -1;
                }
            }
            previous = edge;
        }
        if (start >= 0) {
            pieces.add(new Piece(ByteRange.between(start, to), !sharing));
        }
        return pieces;
    }

    private static boolean sharedPlace(Extent extent) {
        return extent.shared() && extent.placed();
    }

    private static void addEdges(TreeSet<Long> edges, long from, long to, List<Extent> extents) {
        for (Extent extent : extents) {
            if (extent.logical() > from && extent.logical() < to) {
                edges.add(extent.logical());
            }
            if (extent.end() > from && extent.end() < to) {
                edges.add(extent.end());
            }
        }
    }

    /** The extent at {@code index} when it holds data at {@code at}; null for a hole or unwritten space. */
    private static Extent dataAt(long at, List<Extent> extents, int index) {
        if (index >= extents.size()) {
            return null;
        }
        Extent extent = extents.get(index);
        return extent.logical() <= at && at < extent.end() && !extent.readsAsZeros() ? extent : null;
    }

    private static boolean differsAt(long at, Extent base, Extent target) {
        if (base == null || target == null) {
            return base != target;
        }
        boolean samePlace = base.placed()
                && target.placed()
                && base.physical() + (at - base.logical()) == target.physical() + (at - target.logical());
        return !samePlace;
    }
}
