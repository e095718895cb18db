"""linkscope.counters"""
