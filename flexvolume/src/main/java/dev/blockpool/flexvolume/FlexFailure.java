package dev.blockpool.flexvolume;

/** A call that fails with a message for the person reading kubelet's events: the Failure answer's message. */
final class FlexFailure extends RuntimeException {

    FlexFailure(String format, Object... args) {
        super(String.format(format, args), null, false, false);
    }
}
