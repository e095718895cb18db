"""Other tools' outputs as Measurements: nvbandwidth, nccl-tests / rccl-tests, OSU,
p2pBandwidthLatencyTest, TransferBench (one module each), ``detect.read`` for any of them and for
linkscope's own RunRecords. Pure parsing: the verdicts live in ``linkscope.judge``."""
