//! Unit tests of the levels engine without MPI: specs, the registry's error cases, transfer-list
//! checks, smp and disk runtimes moving data, task calls, barriers and composition.
