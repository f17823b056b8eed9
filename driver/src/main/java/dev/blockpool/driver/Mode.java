package dev.blockpool.driver;

/** Which CSI services this process registers besides Identity. */
public enum Mode {
    CONTROLLER,
    NODE,
    ALL;

    public boolean servesController() {
        return this != NODE;
    }

    public boolean servesNode() {
        return this != CONTROLLER;
    }
}
