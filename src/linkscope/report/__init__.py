"""linkscope.report"""
