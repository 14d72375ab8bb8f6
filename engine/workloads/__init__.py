"""Workloads: the GEMM and MHA config spaces and their per-thread programs.

Invariant: a workload and its options determine the program completely
(same inputs, same text), and value names are derived from the workload
(``a_i_k``, ``b_k_j``, ``acc_i_j``, ``q_g_d``, ``o_g_d``, ``m_g``, ``l_g``), so a
hand edit keyed by name survives rebuilding the program.
"""
