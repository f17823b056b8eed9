package dev.blockpool.identity;

import java.util.List;

/** Whether the driver can serve requests now; the reasons when it cannot. */
@FunctionalInterface
public interface Readiness {

    /** Empty when ready; otherwise one line per problem, for the log. */
    List<String> problems();
}
