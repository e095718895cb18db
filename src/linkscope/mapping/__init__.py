"""linkscope.mapping"""
