"""linkscope.patterns"""
